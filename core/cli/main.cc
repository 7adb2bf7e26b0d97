// rill — runs Rill programs with op-kernel plugins loaded from disk.
//
// Exit status: 0 on success; 1 when the program, a plugin or a run fails; 2 for bad usage.
// Failures print one line, "rill: error: <reason>", on standard error.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/abi/status.h"
#include "core/api/feed_fetch_targets.h"
#include "core/api/session.h"
#include "core/cli/args.h"
#include "core/cli/launch.h"
#include "core/cli/malloc_tuning.h"
#include "core/cli/progress.h"
#include "core/errors.h"
#include "core/io/atomic_file.h"
#include "core/io/inference_model.h"
#include "core/io/npy.h"
#include "core/loader/plugin_loader.h"
#include "core/log.h"
#include "core/program/backward.h"
#include "core/program/graph.h"
#include "core/program/program_io.h"
#include "core/program/render_dot.h"
#include "core/program/transpiler.h"
#include "core/program/validate.h"
#include "core/registry/registry.h"
#include "core/runtime/device.h"
#include "core/runtime/dtype.h"
#include "core/runtime/profiler.h"
#include "core/tasks/scheduler.h"

namespace rill::core {
namespace {

void SetLogLevel(const std::string& level) {
  const auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") throw UsageError("unknown log level '" + level + "'");
  core::Logger().set_level(lvl);
}

void ExpectPositional(const Args& a, size_t n, const char* usage) {
  if (a.positional.size() != n) throw UsageError(std::string("usage: rill ") + usage);
}

std::string OneLine(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string FileNameFor(const std::string& var) {
  std::string out = var;
  for (char& c : out)
    if (c == '/' || c == '\\') c = '_';
  return out + ".npy";
}

int64_t PositiveCount(const std::string& flag, const std::string& value, bool allow_zero) {
  size_t used = 0;
  int64_t n = -1;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || n < (allow_zero ? 0 : 1)) {
    throw UsageError(flag + " takes a " + (allow_zero ? "non-negative" : "positive") + " integer, got '" + value + "'");
  }
  return n;
}

// What a run shows: the variables named by --fetch or, without any, the program's fetch
// ops' variables in col order, each with its tensor after the run.
std::vector<std::pair<std::string, const Tensor*>> Results(const std::vector<std::string>& names,
                                                           const std::vector<FeedFetchTarget>& fetches,
                                                           const Scope& scope) {
  std::vector<std::pair<std::string, const Tensor*>> out;
  for (const auto& name : names) {
    const Variable* v = scope.FindVar(name);
    if (v == nullptr) throw Error("fetch: variable '" + name + "' does not exist after the run", RILL_NOT_FOUND);
    const Tensor* t = v->GetTensor();
    if (t == nullptr || !t->initialized()) {
      throw Error("fetch: variable '" + name + "' holds " + v->KindName() + ", not a tensor");
    }
    out.emplace_back(name, t);
  }
  if (!names.empty()) return out;
  for (const auto& f : fetches) out.emplace_back(f.var, &Fetched(scope, f));
  return out;
}

// "loss=0.0123 w=fp32[13,1]": each result's value if it has one, else its type and shape.
std::string ShortValues(const std::vector<std::pair<std::string, const Tensor*>>& results) {
  std::string out;
  for (const auto& [name, t] : results) {
    out += (out.empty() ? "" : " ") + name + "=";
    if (t->numel() == 1) {
      out += t->ValuesToString();
      continue;
    }
    out += DataTypeName(t->dtype()) + "[";
    for (size_t i = 0; i < t->dims().size(); ++i) out += (i ? "," : "") + std::to_string(t->dims()[i]);
    out += "]";
  }
  return out;
}

// Prints each result on a line: name, dtype, dims, values.
void PrintResults(const std::vector<std::pair<std::string, const Tensor*>>& results, const std::string& prefix) {
  for (const auto& [name, t] : results) {
    std::string dims;
    for (size_t i = 0; i < t->dims().size(); ++i) dims += (i ? "," : "") + std::to_string(t->dims()[i]);
    std::printf("%s%s %s [%s] %s\n", prefix.c_str(), name.c_str(), DataTypeName(t->dtype()).c_str(), dims.c_str(),
                t->ValuesToString().c_str());
  }
  std::fflush(stdout);
}

// "cpu", or a device by the name its plugin gives it, with an optional index: "cuda",
// "cuda:1", "fake:0". CUDA is known by name even when no plugin provides it, so that
// running there says why it cannot.
Place ParseDevice(const std::string& text) {
  if (text == "cpu") return Place{};
  const size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  const std::string index = colon == std::string::npos ? "0" : text.substr(colon + 1);
  if (name.empty() || index.empty() || index.size() > 4 || index.find_first_not_of("0123456789") != std::string::npos) {
    throw UsageError("--device takes cpu or DEVICE[:N] (cuda, cuda:1), got '" + text + "'");
  }
  const auto id = static_cast<int32_t>(std::stoi(index));
  if (const Device* device = FindDeviceByName(name)) return Place{device->device_type, id};
  if (name == "cuda") return Place{RILL_CUDA, id};
  throw UsageError("--device " + text + ": no loaded plugin provides a device called '" + name + "'");
}

// --feed-lod VAR=OFFSETS: the variable and its LoD, levels outermost first ("/" between
// them), each a comma-separated list of offsets. Whether the offsets fit the value is the
// feed's check (CheckFeed).
std::pair<std::string, LoD> ParseFeedLod(const std::string& given) {
  const auto eq = given.find('=');
  const std::string usage = "--feed-lod takes VAR=OFFSETS (0,3,7 or, with more levels, 0,2/0,3,7), got '" + given + "'";
  if (eq == std::string::npos || eq == 0 || eq + 1 == given.size()) throw UsageError(usage);
  LoD lod(1);
  for (size_t i = eq + 1; i <= given.size(); ++i) {
    const size_t end = std::min(given.find_first_of(",/", i), given.size());
    const std::string number = given.substr(i, end - i);
    if (number.empty() || number.size() > 18 || number.find_first_not_of("0123456789") != std::string::npos) {
      throw UsageError(usage);
    }
    lod.back().push_back(std::stoull(number));
    if (end < given.size() && given[end] == '/') lod.emplace_back();
    i = end;
  }
  return {given.substr(0, eq), lod};
}

// The index (ProcessOf) of the cluster process this one is: from Paddle's job environment
// (TRAINING_ROLE, a gRPC cluster's only: an MPI cluster's roles are its ranks), else from
// the rank a launcher gave it (mpirun, srun).
size_t ThisProcessIndex(const std::string& dir, const ClusterSpec& spec) {
  const int64_t processes = static_cast<int64_t>(spec.pservers.size()) + spec.trainers;
  if (spec.transport == "mpi" && std::getenv("TRAINING_ROLE") != nullptr) {
    throw Error(dir + " is an MPI cluster, whose processes take their roles from their MPI ranks (mpirun -np " +
                    std::to_string(processes) + "), not from TRAINING_ROLE",
                RILL_INVALID_ARGUMENT);
  }
  size_t index = 0;
  if (PaddleRoleIndex(dir, spec, &index)) return index;
  int64_t rank = -1, size = -1;
  if (!LauncherRank(&rank, &size)) {
    throw UsageError("rill run " + dir +
                     " runs one process of a cluster, picked by the rank a launcher gives it (mpirun -np " +
                     std::to_string(processes) + " rill run " + dir + " ..., or srun) or by Paddle's TRAINING_ROLE " +
                     "environment; for a local cluster, rill launch " + dir);
  }
  if (rank < 0 || rank >= processes || (size >= 0 && size != processes)) {
    throw Error(dir + "/cluster.txt has " + std::to_string(spec.pservers.size()) + " pservers and " +
                std::to_string(spec.trainers) + " trainers: run it as " + std::to_string(processes) +
                " processes (mpirun -np " + std::to_string(processes) + "), not " +
                std::to_string(size >= 0 ? size : rank + 1));
  }
  return static_cast<size_t>(rank);
}

// `rill run DIR` as one process of a cluster (mpirun -np N rill run DIR ...): the run of
// the process this one is (ThisProcessIndex). The options are the trainers', with
// "{trainer}" replaced by the trainer's index; a pserver runs its program once, as is.
Args ForThisRank(const Args& a) {
  const std::string dir = a.positional[1];
  const ClusterSpec spec = ReadClusterSpec((std::filesystem::path(dir) / "cluster.txt").string());
  const ClusterProcess p = ProcessOf(dir, spec, ThisProcessIndex(dir, spec));
  Args run = a;
  run.positional[1] = p.program;
  run.startup = p.startup;
  if (p.trainer < 0) {
    run.feed.clear();
    run.fetch.clear();
    run.save_dir.clear();
    run.iterations = "1";
    run.print_every = "0";
    return run;
  }
  for (auto& f : run.feed) f = WithTrainer(f, p.trainer);
  run.save_dir = WithTrainer(run.save_dir, p.trainer);
  // Trainers are numbered as the MPI transport numbers them: by rank, after the pservers.
  setenv("RILL_TRAINER_ID", std::to_string(p.trainer).c_str(), 1);
  return run;
}

int CmdRun(const Args& given, const Registry& registry) {
  ExpectPositional(given, 2, "run PROGRAM [--fetch VAR]... [--feed VAR=FILE.npy]... [--save DIR]");
  const ModelFiles model_files{given.model_filename, given.params_filename, given.allow_model_files};
  const bool model = IsInferenceModel(given.positional[1], model_files);
  const Args a = std::filesystem::is_directory(given.positional[1]) && !model ? ForThisRank(given) : given;
  const int64_t iterations = PositiveCount("--iterations", a.iterations, false);
  const int64_t print_every = PositiveCount("--print-every", a.print_every, true);
  const Place place = ParseDevice(a.device);
  // An inference model: its program, and its parameters put in the scope before the run.
  InferenceModel loaded;
  if (model) {
    loaded = LoadInferenceModel(a.positional[1], model_files);
  } else if (!a.model_filename.empty() || !a.params_filename.empty()) {
    throw UsageError("--model-filename and --params-filename name the files of a model directory; '" + a.positional[1] +
                     "' is not one (no '" + (a.model_filename.empty() ? std::string("__model__") : a.model_filename) +
                     "' in it)");
  }
  Session session(registry, model ? loaded.program : ReadProgram(a.positional[1]), place);
  std::optional<Session> startup;
  if (!a.startup.empty()) startup.emplace(registry, ReadProgram(a.startup), place);

  auto scope = Scope::NewRoot();
  for (auto& [name, value] : loaded.parameters) *scope->Var(name)->GetMutableTensor() = std::move(value);
  Session::Feeds feeds;
  for (const auto& feed : a.feed) {
    const auto eq = feed.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == feed.size()) {
      throw UsageError("--feed takes VAR=FILE.npy, got '" + feed + "'");
    }
    feeds.emplace_back(feed.substr(0, eq), ReadNpy(feed.substr(eq + 1)));
  }
  for (const auto& given : a.feed_lod) {
    const auto [name, lod] = ParseFeedLod(given);
    const std::string& var = name;  // a structured binding cannot be captured by a lambda in C++17
    const auto fed = std::find_if(feeds.begin(), feeds.end(), [&](const auto& f) { return f.first == var; });
    if (fed == feeds.end())
      throw UsageError("--feed-lod " + given + ": '" + name + "' is not fed (--feed " + name + "=FILE.npy)");
    fed->second.mutable_lod() = lod;
  }
  session.Feed(*scope, std::move(feeds));
  SchedulerOptions tasks;
  tasks.workers = static_cast<int>(PositiveCount("--workers", a.workers, true));
  // The trace's directory is checked before the run, so that a path the trace cannot be
  // written to fails first, not after a long run.
  if (!a.profile.empty()) {
    const std::filesystem::path parent = std::filesystem::path(a.profile).parent_path();
    if (access(parent.empty() ? "." : parent.c_str(), W_OK) != 0) {
      throw Error("--profile: cannot write '" + a.profile + "': " + std::strerror(errno));
    }
  }
  // On a terminal the --print-every values go into the progress line (progress.h).
  Progress progress(iterations, isatty(STDERR_FILENO) != 0);
  std::optional<Profiler> profiler;
  if (!a.profile.empty() || a.profile_summary) profiler.emplace();
  // The whole run is the main task: go blocks still running when it ends are stopped.
  RunTasks(tasks, [&] {
    if (startup) startup->Run(scope);
    for (int64_t i = 1; i <= iterations; ++i) {
      session.Run(scope);
      const bool due = print_every > 0 && i % print_every == 0 && i != iterations;
      if (due && !progress.terminal()) {
        PrintResults(Results(a.fetch, session.fetches(), *scope), "[iteration " + std::to_string(i) + "] ");
      }
      progress.Done(i, due && progress.terminal() ? ShortValues(Results(a.fetch, session.fetches(), *scope)) : "");
    }
  });
  progress.Finish();
  if (profiler) {
    Trace trace = profiler->Stop();
    trace.process_name = "rill run " + std::filesystem::path(a.positional[1]).filename().string();
    if (!a.profile.empty()) {
      WriteFileAtomically(a.profile, [&](std::ostream& out) { WriteChromeTrace(trace, out); });
    }
    if (a.profile_summary) WriteSummary(trace, std::cout);
    std::cout.flush();
  }
  const auto results = Results(a.fetch, session.fetches(), *scope);
  PrintResults(results, iterations > 1 && print_every > 0 ? "[iteration " + std::to_string(iterations) + "] " : "");
  if (!a.save_dir.empty()) {
    std::filesystem::create_directories(a.save_dir);
    for (const auto& [name, t] : results)
      WriteNpy(*t, (std::filesystem::path(a.save_dir) / FileNameFor(name)).string());
  }
  return 0;
}

// A program file, or an inference model (its program, and its parameters loaded as
// `rill run` would load them, with what the model policy would refuse listed, not thrown).
struct CheckedInput {
  std::shared_ptr<const Program> program;
  std::vector<std::pair<std::string, Tensor>> parameters;
  bool model = false;
  std::vector<std::string> file_access;
};
CheckedInput LoadProgramOrModel(const Args& a) {
  const ModelFiles files{a.model_filename, a.params_filename, /*allow_files_outside=*/true};
  if (!IsInferenceModel(a.positional[1], files)) return {ReadProgram(a.positional[1]), {}, false, {}};
  InferenceModel m = LoadInferenceModel(a.positional[1], files);
  return {std::move(m.program), std::move(m.parameters), true, std::move(m.file_access)};
}

// The model's file access `rill run` refuses without --allow-model-files, one line each.
void PrintFileAccess(const CheckedInput& in) {
  if (in.file_access.empty()) return;
  std::printf("file access (rill run refuses it without --allow-model-files):\n");
  for (const auto& f : in.file_access) std::printf("  %s\n", f.c_str());
}

int CmdCheck(const Args& a, const Registry& registry) {
  ExpectPositional(a, 2, "check PROGRAM|MODEL");
  const std::string& path = a.positional[1];
  const CheckedInput in = LoadProgramOrModel(a);
  const Program& program = *in.program;
  MissingOps missing;
  auto problems = ValidateProgram(program, registry, &missing);
  PrintFileAccess(in);
  problems.insert(problems.end(), in.file_access.begin(), in.file_access.end());
  if (problems.empty() && missing.empty()) {
    int64_t ops = 0;
    for (int b = 0; b < program.blocks_size(); ++b) ops += program.block(b).ops_size;
    std::printf("%s: ok (%d blocks, %lld ops", path.c_str(), program.blocks_size(), static_cast<long long>(ops));
    if (in.model) std::printf(", %zu parameters", in.parameters.size());
    std::printf(")\n");
    return 0;
  }
  // What a user needs first of a model that does not run: which ops to find a plugin for.
  int64_t missing_ops = 0;
  if (!missing.empty()) {
    std::printf("%zu op type(s) no loaded plugin provides (loaded: %s):\n", missing.size(),
                registry.EnabledPluginList().c_str());
    for (const auto& [type, count] : missing) {
      const std::string plugin = registry.DisabledPluginOf(type);
      std::printf("  %-24s %lld op%s%s\n", type.c_str(), static_cast<long long>(count), count == 1 ? "" : "s",
                  plugin.empty() ? "" : ("  (plugin '" + plugin + "' has it; not enabled, see --plugins)").c_str());
      missing_ops += count;
    }
  }
  for (const auto& p : problems) std::printf("%s\n", p.c_str());
  std::string summary;
  if (!missing.empty()) {
    const auto& [type, count] = missing.front();
    summary = registry.UnknownOpMessage(type) + " (" + std::to_string(count) + " op" + (count == 1 ? "" : "s") + ")";
    if (missing.size() > 1) {
      summary += ", and " + std::to_string(missing_ops - count) + " op(s) of " + std::to_string(missing.size() - 1) +
                 " other type(s) no loaded plugin provides";
    }
  }
  if (!problems.empty()) {
    summary +=
        (summary.empty() ? "" : "; ") + std::to_string(problems.size()) + " problem(s); first: " + problems.front();
  }
  throw Error(path + ": " + summary);
}

int CmdGraph(const Args& a, const Registry& registry) {
  ExpectPositional(a, 2, "graph PROGRAM|MODEL [-o FILE.svg|.png|.dot] [--block N]");
  const std::string& path = a.positional[1];
  const ModelFiles files{a.model_filename, a.params_filename};
  std::string program_file = ModelProgramFile(path, files);
  if (program_file.empty()) program_file = path;
  const proto::ProgramDesc program = LoadProgram(program_file);
  GraphOptions options;
  if (!a.block.empty()) {
    options.block = static_cast<int>(PositiveCount("--block", a.block, true));
    if (options.block >= program.blocks_size()) {
      throw UsageError("--block " + a.block + ": " + path + " has blocks 0 to " +
                       std::to_string(program.blocks_size() - 1));
    }
  }
  options.problems = ValidateProgram(program, registry);
  const std::string dot = ProgramToDot(program, options);
  if (a.output.empty()) {
    std::fwrite(dot.data(), 1, dot.size(), stdout);
  } else {
    WriteGraph(dot, a.output);
  }
  if (!options.problems.empty()) {
    std::fprintf(stderr, "rill graph: %zu problem(s) marked (rill check %s lists them)\n", options.problems.size(),
                 path.c_str());
  }
  return 0;
}

int CmdConvert(const Args& a) {
  ExpectPositional(a, 2, "convert PROGRAM -o OUT");
  if (a.output.empty()) throw UsageError("usage: rill convert PROGRAM -o OUT");
  SaveProgram(LoadProgram(a.positional[1]), a.output, FormatForPath(a.output));
  return 0;
}

int CmdBackward(const Args& a, const Registry& registry) {
  ExpectPositional(a, 2, "backward PROGRAM --loss VAR -o OUT [--parameters A,B] [--sgd LR]");
  if (a.loss.empty() || a.output.empty()) {
    throw UsageError("usage: rill backward PROGRAM --loss VAR -o OUT [--parameters A,B] [--sgd LR]");
  }
  float lr = 0;
  if (!a.sgd.empty()) {
    size_t used = 0;
    try {
      lr = std::stof(a.sgd, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != a.sgd.size()) throw UsageError("--sgd takes a learning rate, got '" + a.sgd + "'");
  }
  proto::ProgramDesc program = LoadProgram(a.positional[1]);
  ValidateProgramOrThrow(program, registry);
  const auto grads = AppendBackward(program, registry, a.loss, a.parameters);
  if (!a.sgd.empty()) AppendSgd(program, grads, lr);
  ValidateProgramOrThrow(program, registry);
  SaveProgram(program, a.output, FormatForPath(a.output));
  for (const auto& pg : grads) std::printf("%s %s\n", pg.param.c_str(), pg.grad.c_str());
  return 0;
}

int CmdTranspile(const Args& a, const Registry& registry) {
  const char* usage =
      "transpile PROGRAM --startup PROG --trainers N --pservers HOST:PORT,... -o DIR [--mode sync|async "
      "[--max-staleness S]] [--checkpoint-dir DIR [--checkpoint-every N]]";
  ExpectPositional(a, 2, usage);
  if (a.startup.empty() || a.trainers.empty() || a.pservers.empty() || a.output.empty()) {
    throw UsageError(std::string("usage: rill ") + usage);
  }
  TranspileOptions options;
  const int64_t trainers = PositiveCount("--trainers", a.trainers, false);
  if (trainers > 65536) throw UsageError("--trainers is at most 65536, got " + a.trainers);
  options.trainers = static_cast<int32_t>(trainers);
  options.pservers = a.pservers;
  const std::string transport = a.transport.empty() ? "grpc" : a.transport;
  if (transport == "mpi") {
    options.send_op = "send_mpi";
    options.recv_op = "recv_mpi";
    options.serve_op = "listen_and_serv_mpi";
    options.prefetch_op = "prefetch_mpi";
  } else if (transport != "grpc") {
    throw UsageError("--transport is grpc or mpi, got '" + transport + "'");
  }
  if (!a.deadline_ms.empty()) {
    options.deadline_ms = PositiveCount("--deadline-ms", a.deadline_ms, false);
    if (options.deadline_ms > INT32_MAX) throw UsageError("--deadline-ms is at most " + std::to_string(INT32_MAX));
  }
  if (!a.mode.empty() && a.mode != "sync" && a.mode != "async") {
    throw UsageError("--mode is sync or async, got '" + a.mode + "'");
  }
  options.sync = a.mode != "async";
  if (!a.max_staleness.empty()) {
    if (options.sync) throw UsageError("--max-staleness bounds asynchronous training: give it with --mode async");
    options.max_staleness = PositiveCount("--max-staleness", a.max_staleness, true);
  }
  if (!a.checkpoint_every.empty() && a.checkpoint_dir.empty()) {
    throw UsageError("--checkpoint-every needs --checkpoint-dir, where the checkpoints go");
  }
  if (!a.checkpoint_dir.empty()) {
    // Absolute: the pservers may run from another directory than this command.
    options.checkpoint_dir = std::filesystem::absolute(a.checkpoint_dir).lexically_normal().string();
    std::filesystem::create_directories(options.checkpoint_dir);
    if (!a.checkpoint_every.empty())
      options.checkpoint_every = PositiveCount("--checkpoint-every", a.checkpoint_every, false);
  }
  const proto::ProgramDesc train = LoadProgram(a.positional[1]);
  ValidateProgramOrThrow(train, registry);
  const TranspiledPrograms out = Transpile(train, LoadProgram(a.startup), options);
  namespace fs = std::filesystem;
  fs::create_directories(a.output);
  auto save = [&](const proto::ProgramDesc& program, const std::string& name) {
    ValidateProgramOrThrow(program, registry);
    SaveProgram(program, (fs::path(a.output) / name).string(), ProgramFormat::kText);
    std::printf("wrote %s\n", (fs::path(a.output) / name).c_str());
  };
  save(out.trainer, "trainer.pbtxt");
  save(out.trainer_startup, "trainer_startup.pbtxt");
  for (size_t i = 0; i < out.pservers.size(); ++i) {
    save(out.pservers[i], "pserver_" + std::to_string(i) + ".pbtxt");
    save(out.pserver_startups[i], "pserver_" + std::to_string(i) + "_startup.pbtxt");
  }
  WriteClusterSpec(ClusterSpec{transport, options.trainers, options.pservers, options.checkpoint_dir},
                   (fs::path(a.output) / "cluster.txt").string());
  for (const auto& [param, endpoint] : out.placement) std::printf("%s -> %s\n", param.c_str(), endpoint.c_str());
  return 0;
}

int CmdLaunch(const Args& a) {
  ExpectPositional(a, 2, "launch DIR [--log-dir LOGS] [--deadline-ms MS] [--transport grpc|mpi] [-- RUN-OPTIONS...]");
  LaunchOptions options;
  options.dir = a.positional[1];
  options.log_dir = a.log_dir;
  options.transport = a.transport;
  options.trainer_args = a.passthrough;
  options.profile_dir = a.profile;
  if (!a.deadline_ms.empty()) {
    options.deadline = std::chrono::milliseconds(PositiveCount("--deadline-ms", a.deadline_ms, false));
    options.deadline_given = true;
  }
  for (const auto& d : a.plugin_dirs) options.common_args.insert(options.common_args.end(), {"--plugin-path", d});
  for (const auto& f : a.plugin_files) options.common_args.insert(options.common_args.end(), {"--plugin", f});
  if (!a.enable.empty()) {
    std::string names;
    for (const auto& n : a.enable) names += (names.empty() ? "" : ",") + n;
    options.common_args.insert(options.common_args.end(), {"--plugins", names});
  }
  options.common_args.insert(options.common_args.end(), {"--log-level", a.log_level});
  Launch(options);
  return 0;
}

int CmdOps(const Args& a, const Registry& registry) {
  ExpectPositional(a, 1, "ops");
  for (const OpSchemaEntry* op : registry.AllOps()) {
    std::printf("%-24s %s\n", op->type.c_str(), op->plugin.c_str());
  }
  return 0;
}

std::string SlotFlags(const SlotSpec& s) {
  std::string f;
  if (s.optional()) f += " optional";
  if (s.duplicable()) f += " list";
  return f.empty() ? "" : " (" + f.substr(1) + ")";
}

// `rill describe PROGRAM|MODEL`: what a user asks of a model first: what it takes, what
// it gives, what it holds and which of its ops this Rill cannot run.
int DescribeProgram(const Args& a, const Registry& registry) {
  const CheckedInput in = LoadProgramOrModel(a);
  const Program& program = *in.program;
  std::printf("%s: %s\n", a.positional[1].c_str(), in.model ? "inference model" : "program");
  const int64_t version = program.version();
  std::printf("written by: %s\n", version >= 1000000
                                      ? ("Paddle " + std::to_string(version / 1000000) + "." +
                                         std::to_string(version / 1000 % 1000) + "." + std::to_string(version % 1000))
                                            .c_str()
                                      : "Fluid (no version recorded)");
  int64_t ops = 0;
  std::map<std::string, int64_t> by_type;
  for (int b = 0; b < program.blocks_size(); ++b) {
    ops += program.block(b).ops_size;
    for (const ProgramOp& op : program.ops(program.block(b))) ++by_type[std::string(program.str(op.type))];
  }
  std::printf("blocks: %d, ops: %lld\n", program.blocks_size(), static_cast<long long>(ops));
  const auto targets = [&](const char* what, const std::vector<FeedFetchTarget>& list) {
    std::printf("%s:%s\n", what, list.empty() ? " none" : "");
    for (const auto& f : list) {
      std::printf("  %d  %s  %s\n", f.col, f.var.c_str(), DeclaredType(program, f.var).c_str());
    }
  };
  targets("feeds (col, variable, declared type)", FeedTargets(program));
  targets("fetches", FetchTargets(program));
  if (in.model) {
    uint64_t bytes = 0;
    for (const auto& [name, t] : in.parameters) bytes += t.nbytes();
    std::printf("parameters: %zu, %llu bytes\n", in.parameters.size(), static_cast<unsigned long long>(bytes));
    PrintFileAccess(in);
  }
  std::vector<std::pair<std::string, int64_t>> sorted(by_type.begin(), by_type.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  std::printf("op types (count, provided by):\n");
  for (const auto& [type, count] : sorted) {
    const OpSchemaEntry* op = registry.FindOp(type);
    const std::string disabled = op == nullptr ? registry.DisabledPluginOf(type) : "";
    std::printf("  %-24s %6lld  %s\n", type.c_str(), static_cast<long long>(count),
                op != nullptr      ? op->plugin.c_str()
                : disabled.empty() ? "MISSING: no loaded plugin provides it"
                                   : ("MISSING: plugin '" + disabled + "' is not enabled").c_str());
  }
  return 0;
}

int CmdDescribe(const Args& a, const Registry& registry) {
  ExpectPositional(a, 2, "describe OP|PROGRAM|MODEL");
  const OpSchemaEntry* op = registry.FindOp(a.positional[1]);
  if (op == nullptr && std::filesystem::exists(a.positional[1])) return DescribeProgram(a, registry);
  if (op == nullptr) throw Error(registry.UnknownOpMessage(a.positional[1]), RILL_NOT_FOUND);
  std::printf("%s  (plugin %s)\n  %s\n", op->type.c_str(), op->plugin.c_str(), op->doc.c_str());
  std::printf("inputs:\n");
  for (const auto& s : op->inputs) std::printf("  %s%s  %s\n", s.name.c_str(), SlotFlags(s).c_str(), s.doc.c_str());
  std::printf("outputs:\n");
  for (const auto& s : op->outputs) std::printf("  %s%s  %s\n", s.name.c_str(), SlotFlags(s).c_str(), s.doc.c_str());
  std::printf("attributes:\n");
  for (const auto& at : op->attrs) {
    std::printf("  %s: %s %s  %s\n", at.name.c_str(), AttrTypeName(at.type).c_str(),
                at.required ? "(required)" : ("= " + at.default_value.ToString()).c_str(), at.doc.c_str());
  }
  std::printf("kernels:");
  for (const KernelEntry* k : registry.KernelsOf(op->type)) {
    std::printf(" %s/%s", DeviceName(k->device_type).c_str(), DataTypeName(k->dtype).c_str());
  }
  std::printf("\n");
  if (!op->dtype_source.empty()) std::printf("kernel chosen by the dtype of: %s\n", op->dtype_source.c_str());
  return 0;
}

int CmdPlugins(const Args& a, const std::vector<PluginInfo>& plugins) {
  ExpectPositional(a, 1, "plugins");
  for (const auto& p : plugins) {
    std::printf("%-12s %-8s abi %u  %3zu ops  %s%s\n", p.name.c_str(), p.version.c_str(), p.abi_version, p.ops.size(),
                p.path.c_str(), p.enabled ? "" : "  (not enabled)");
  }
  return 0;
}

// Which plugins the global options (or RILL_PLUGIN_PATH) ask for.
LoadOptions PluginLoadOptions(const Args& a) {
  LoadOptions options;
  options.dirs = a.plugin_dirs.empty() ? PluginDirsFromEnvironment() : a.plugin_dirs;
  options.files = a.plugin_files;
  options.enable = a.enable;
  return options;
}

// A plugin's command (Args::plugin_command): found among the loaded plugins' and run.
int CmdPluginCommand(const Args& a, const Registry& registry) {
  const std::string& name = a.positional[0];
  const CommandEntry* command = registry.FindCommand(name);
  if (command == nullptr) {
    std::fprintf(stderr,
                 "rill: error: unknown command '%s': not one of rill's, and no plugin loaded (%s) provides it "
                 "(rill --help lists the commands)\n",
                 name.c_str(), registry.EnabledPluginList().c_str());
    return 2;
  }
  std::vector<const char*> argv;
  for (size_t i = 1; i < a.positional.size(); ++i) argv.push_back(a.positional[i].c_str());
  RillStatus* status = command->run(command->user_data, static_cast<int32_t>(argv.size()), argv.data());
  std::fflush(stdout);
  if (status == nullptr) return 0;
  const std::unique_ptr<RillStatus> owned(status);
  std::fprintf(stderr, "rill %s: error: %s\n", name.c_str(), OneLine(status->message).c_str());
  return status->code == RILL_INVALID_ARGUMENT ? 2 : 1;
}

// `rill --help`'s last section: the commands the plugins provide. Left out when the
// plugins do not load (any command, `rill plugins` say why).
void PrintPluginCommands(const Args& a) {
  static Registry registry;
  registry.ReserveCommands(BuiltinCommands());
  try {
    LoadPlugins(registry, PluginLoadOptions(a));
  } catch (const std::exception&) {
    return;
  }
  const std::vector<const CommandEntry*> commands = registry.AllCommands();
  if (commands.empty()) return;
  std::printf("\nCOMMANDS FROM PLUGINS:\n");
  for (const CommandEntry* c : commands) {
    std::printf("  %-10s %s\n             %s (plugin %s)\n", c->name.c_str(), c->usage.c_str(), c->summary.c_str(),
                c->plugin.c_str());
  }
}

int Main(int argc, char** argv) {
  Args a;
  try {
    a = ParseArgs(argc, argv);
    SetLogLevel(a.log_level);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s\n", OneLine(e.what()).c_str());
    return 2;
  }
  if (a.help) {
    std::printf("%s", a.help_text.c_str());
    if (a.positional.empty() || a.plugin_command) PrintPluginCommands(a);
    return 0;
  }
  if (a.version) {
    std::printf("rill %s (plugin ABI version %u)\n", RILL_PROJECT_VERSION, RILL_ABI_VERSION);
    return 0;
  }
  if (a.positional.empty()) {
    std::fprintf(stderr, "rill: no command given (rill --help lists the commands)\n");
    return 2;
  }
  const std::string& cmd = a.positional[0];
  try {
    if (cmd == "convert") return CmdConvert(a);
    if (cmd == "launch") return CmdLaunch(a);
    if (cmd == "run") {
      const std::optional<MallocTuning> tuning = ParseMallocTuning(a.malloc);
      if (!tuning) throw UsageError("--malloc must be tuned or default, not '" + a.malloc + "'");
      ApplyMallocTuning(*tuning);  // before the plugins, whose init may start threads
    }
    // A registry and its plugins live to the end of the process (plugins are never unloaded).
    static Registry registry;
    registry.ReserveCommands(BuiltinCommands());
    const std::vector<PluginInfo> plugins = LoadPlugins(registry, PluginLoadOptions(a));
    if (a.plugin_command) return CmdPluginCommand(a, registry);
    if (cmd == "run") return CmdRun(a, registry);
    if (cmd == "check") return CmdCheck(a, registry);
    if (cmd == "ops") return CmdOps(a, registry);
    if (cmd == "describe") return CmdDescribe(a, registry);
    if (cmd == "backward") return CmdBackward(a, registry);
    if (cmd == "transpile") return CmdTranspile(a, registry);
    if (cmd == "graph") return CmdGraph(a, registry);
    return CmdPlugins(a, plugins);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "rill %s: error: %s (rill %s --help lists its options)\n", cmd.c_str(),
                 OneLine(e.what()).c_str(), cmd.c_str());
    return 2;
  } catch (const std::bad_alloc& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "rill: error: out of memory (%s)\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "rill: error: %s\n", OneLine(e.what()).c_str());
    return 1;
  }
}

}  // namespace
}  // namespace rill::core

int main(int argc, char** argv) { return rill::core::Main(argc, argv); }
