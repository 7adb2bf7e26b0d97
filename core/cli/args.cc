#include "core/cli/args.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace rill::core {
namespace {

// The global options that take a value, which the search for the subcommand skips.
const std::set<std::string> kGlobalValued = {"--plugin-path", "--plugin", "--plugins", "--log-level"};

// The subcommand the arguments name: the first that is neither an option nor a global
// option's value. Empty if there is none.
std::string FindSubcommand(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("-", 0) != 0) return arg;
    if (kGlobalValued.count(arg)) ++i;  // its value is the next argument
  }
  return "";
}

// For a command that is not rill's own (a plugin's, or none): the global options among
// `args`, wherever they are, for rill; every other argument after `name`, in order, into
// *command_args, for the command. Global options are recognised as --opt VALUE and
// --opt=VALUE.
std::vector<std::string> SplitPluginCommand(const std::vector<std::string>& args, const std::string& name,
                                            std::vector<std::string>* command_args) {
  std::vector<std::string> globals;
  bool after_name = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const std::string option = arg.substr(0, arg.find('='));
    if (kGlobalValued.count(option) || (!after_name && arg.rfind("-", 0) == 0)) {
      globals.push_back(arg);
      if (kGlobalValued.count(arg) && i + 1 < args.size()) globals.push_back(args[++i]);
    } else if (!after_name && arg == name) {
      after_name = true;
    } else {
      command_args->push_back(arg);
    }
  }
  return globals;
}

}  // namespace

const std::set<std::string>& BuiltinCommands() {
  static const std::set<std::string> names = {"run",       "check",  "graph", "convert",  "backward",
                                              "transpile", "launch", "ops",   "describe", "plugins"};
  return names;
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  std::vector<std::string> args(argv + 1, argv + argc);
  // What follows "--" is `rill launch`'s options for the processes it starts.
  if (auto dashes = std::find(args.begin(), args.end(), "--"); dashes != args.end()) {
    a.passthrough.assign(dashes + 1, args.end());
    args.erase(dashes, args.end());
  }

  CLI::App app(
      "rill: runs Rill programs with op-kernel plugins loaded from disk. Exit status: 0 on success, "
      "1 when the program, a plugin or a run fails, 2 for bad usage.",
      "rill");
  app.set_help_flag("-h,--help", "show this help; after a subcommand, its own");
  app.add_flag("--version", a.version, "show rill's version and plugin ABI version");
  app.add_option("--plugin-path", a.plugin_dirs,
                 "load every plugin (*.so) in DIR (repeatable); replaces the default set, as does "
                 "RILL_PLUGIN_PATH=DIR[:DIR...]. Default: the plugins shipped beside this binary "
                 "(<prefix>/lib/rill/plugins)")
      ->type_name("DIR");
  app.add_option("--plugin", a.plugin_files, "also load the plugin FILE (repeatable)")->type_name("FILE");
  app.add_option("--plugins", a.enable, "enable only the named plugins; the others only inform error messages")
      ->delimiter(',')
      ->type_name("A,B,...");
  app.add_option("--log-level", a.log_level, "trace, debug, info, warn (default), error or off")->type_name("LEVEL");
  app.require_subcommand(0, 1);

  std::vector<std::string> rest;  // the subcommand's positional arguments
  std::map<std::string, CLI::App*> subcommands;
  const auto command = [&](const char* name, const char* description, const char* operand, const char* operand_help) {
    if (BuiltinCommands().count(name) == 0) throw std::logic_error(std::string("BuiltinCommands() lacks ") + name);
    CLI::App* sub = app.add_subcommand(name, description);
    subcommands[name] = sub;
    sub->fallthrough();  // the global options work after the subcommand too
    if (operand != nullptr) sub->add_option("operand", rest, operand_help)->type_name(operand);
    return sub;
  };
  const auto model_files = [&](CLI::App* sub) {
    sub->add_option("--model-filename", a.model_filename, "a model directory's program file (default __model__)")
        ->type_name("F");
    sub->add_option("--params-filename", a.params_filename, "a model directory's combined parameter file")
        ->type_name("F");
  };

  CLI::App* run = command("run",
                          "validate and run block 0 of a program (text .pbtxt or binary), an inference "
                          "model as Paddle saves it (its parameters loaded first), or this process's part of "
                          "a transpiled cluster DIR, by its rank under mpirun or srun or by Paddle's "
                          "TRAINING_ROLE environment",
                          "PROGRAM|MODEL|DIR", "what to run");
  run->add_option("--fetch", a.fetch,
                  "print VAR after the run (repeatable); without any, the variables of the "
                  "program's fetch ops, in col order")
      ->type_name("VAR");
  run->add_option("--feed", a.feed, "set VAR from a .npy file before the run (repeatable)")->type_name("VAR=FILE");
  run->add_option("--feed-lod", a.feed_lod,
                  "give the fed VAR a LoD: the offsets of its sequences in its rows, comma-separated; more "
                  "levels outermost first, separated by / (0,2,3/0,4,9,12: two groups of sequences)")
      ->type_name("VAR=OFFSETS");
  run->add_flag("--allow-model-files", a.allow_model_files,
                "let an inference model write files (save ops) and "
                "read files outside its directory; refused by default, as a model runs with your rights");
  run->add_option("--save", a.save_dir, "also write every fetched VAR to DIR/VAR.npy")->type_name("DIR");
  run->add_option("--startup", a.startup, "run PROG once first, in the same scope")->type_name("PROG");
  run->add_option("--iterations", a.iterations,
                  "run the program N times (a training loop); on a terminal a "
                  "progress line shows how far it got")
      ->type_name("N");
  run->add_option("--print-every", a.print_every,
                  "also print the fetched variables every K iterations (on a "
                  "terminal: in the progress line)")
      ->type_name("K");
  run->add_option("--device", a.device,
                  "run kernels on DEV where the op has one: cpu (default), cuda[:N] or "
                  "another plugin's device")
      ->type_name("DEV");
  run->add_option("--workers", a.workers, "threads that run the program's tasks; default: one per CPU")->type_name("N");
  run->add_option("--malloc", a.malloc,
                  "tuned (default) or default: glibc's malloc as rill tunes it or as it "
                  "comes")
      ->type_name("MODE");
  run->add_option("--profile", a.profile,
                  "write a trace of the run in Chrome's trace-event format (Perfetto, "
                  "chrome://tracing)")
      ->type_name("FILE.json");
  run->add_flag("--profile-summary", a.profile_summary, "print the ops by total time");
  model_files(run);

  CLI::App* check = command("check",
                            "validate only: the op types no loaded plugin provides, with counts, then "
                            "every other problem",
                            "PROGRAM|MODEL", "what to check");
  model_files(check);

  CLI::App* graph = command("graph",
                            "the program as a Graphviz graph: ops, variables (parameters blue, channels "
                            "orange), sub-blocks as clusters under their ops, channel sends joined to their "
                            "receives, problems red",
                            "PROGRAM|MODEL", "what to draw");
  graph
      ->add_option("-o", a.output,
                   "FILE.svg, .png, .pdf (rendered by Graphviz's dot) or .dot; none: DOT on "
                   "stdout")
      ->type_name("FILE");
  graph->add_option("--block", a.block, "draw only block N")->type_name("N");
  model_files(graph);

  CLI::App* convert =
      command("convert", "write a program as text (OUT ends in .pbtxt/.txt) or binary", "PROGRAM", "the program");
  convert->add_option("-o", a.output, "the file to write")->type_name("OUT");

  CLI::App* backward = command("backward",
                               "append the backward pass of VAR and, with --sgd, SGD updates; prints "
                               "each parameter with its gradient",
                               "PROGRAM", "the program");
  backward->add_option("--loss", a.loss, "the loss variable")->type_name("VAR");
  backward->add_option("-o", a.output, "the file to write")->type_name("OUT");
  backward->add_option("--parameters", a.parameters, "the parameters (default: block 0's persistable variables)")
      ->delimiter(',')
      ->type_name("A,B,...");
  backward->add_option("--sgd", a.sgd, "append SGD updates at learning rate LR")->type_name("LR");

  CLI::App* transpile = command("transpile",
                                "split a training program into a trainer program and one program "
                                "per pserver, with their startups, as text in DIR (plus DIR/cluster.txt)",
                                "PROGRAM", "the training program");
  transpile->add_option("--startup", a.startup, "its startup program")->type_name("PROG");
  transpile->add_option("--trainers", a.trainers, "how many trainers")->type_name("N");
  transpile->add_option("--pservers", a.pservers, "the pservers' endpoints")
      ->delimiter(',')
      ->type_name("HOST:PORT,...");
  transpile->add_option("-o", a.output, "the directory to write")->type_name("DIR");
  transpile->add_option("--deadline-ms", a.deadline_ms, "the transport ops' deadline")->type_name("MS");
  transpile
      ->add_option("--mode", a.mode,
                   "sync (default: the pservers average every trainer's gradients an iteration) or async (each "
                   "trainer's step applied alone, as it arrives)")
      ->type_name("sync|async");
  transpile
      ->add_option("--max-staleness", a.max_staleness,
                   "async: how many steps a trainer may run ahead of the slowest other one (default: no bound)")
      ->type_name("S");
  transpile
      ->add_option("--checkpoint-dir", a.checkpoint_dir,
                   "each pserver checkpoints what it holds there (pserver_I.ckpt) and restores it when started "
                   "again; `rill launch` restarts a pserver that dies")
      ->type_name("DIR");
  transpile->add_option("--checkpoint-every", a.checkpoint_every, "iterations between checkpoints (default 10)")
      ->type_name("N");
  transpile
      ->add_option("--transport", a.transport,
                   "grpc (send/recv/listen_and_serv, default) or mpi "
                   "(send_mpi/recv_mpi/listen_and_serv_mpi/prefetch_mpi)")
      ->type_name("grpc|mpi");

  CLI::App* launch = command("launch",
                             "run the cluster of DIR locally: one `rill run` per pserver and trainer "
                             "(\"{trainer}\" in the run options after -- becomes J); logs in LOGS; fails naming a "
                             "failed process",
                             "DIR", "a transpiled cluster");
  launch->add_option("--log-dir", a.log_dir, "where the processes' logs go (default DIR/logs)")->type_name("LOGS");
  launch->add_option("--deadline-ms", a.deadline_ms, "the transport ops' deadline")->type_name("MS");
  launch->add_option("--transport", a.transport, "grpc or mpi (under one mpirun)")->type_name("grpc|mpi");
  launch
      ->add_option("--profile", a.profile,
                   "each process writes its trace (rill run --profile) to DIR, on one "
                   "clock: load them together in Perfetto")
      ->type_name("DIR");

  command("ops", "every op with the plugin that provides it", nullptr, nullptr);
  CLI::App* describe = command("describe",
                               "an op's inputs, outputs, attributes, kernels and doc; or a program's "
                               "or model's feeds, fetches, parameters and op types",
                               "OP|PROGRAM|MODEL", "what to describe");
  model_files(describe);
  command("plugins", "the plugins loaded: name, version, ABI version, file, op count", nullptr, nullptr);

  const std::string name = FindSubcommand(args);
  std::vector<std::string> command_args;  // a plugin's command: the arguments it parses itself
  if (!name.empty() && subcommands.count(name) == 0) {
    a.plugin_command = true;
    args = SplitPluginCommand(args, name, &command_args);
  }
  // One value per occurrence of a repeatable option: `--plugin x.so prog.pbtxt` loads one
  // plugin and runs prog.pbtxt (CLI11 would take both as plugins).
  const auto one_value_each = [](CLI::App* sub) {
    for (CLI::Option* opt : sub->get_options()) {
      if (opt->nonpositional()) opt->allow_extra_args(false);
    }
  };
  one_value_each(&app);
  for (const auto& entry : subcommands) one_value_each(entry.second);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    a.help = true;
    a.help_text = name.empty() || a.plugin_command ? app.help() : subcommands.at(name)->help();
    return a;
  } catch (const CLI::ParseError& e) {
    const std::string who = name.empty() ? "rill" : "rill " + name;
    throw UsageError(who + ": error: " + e.what() + " (" + who + " --help lists its options)");
  }
  if (!name.empty()) {
    a.positional.push_back(name);
    const std::vector<std::string>& operands = a.plugin_command ? command_args : rest;
    a.positional.insert(a.positional.end(), operands.begin(), operands.end());
  }
  if (!a.passthrough.empty() && name != "launch") {
    throw UsageError("rill " + name +
                     ": error: arguments after -- are `rill launch`'s, for the processes it "
                     "starts");
  }
  return a;
}

}  // namespace rill::core
