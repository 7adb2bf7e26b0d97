// core/cli/args.h — rill's command line: one subcommand, each with its own options (CLI11).
//
// Contract: ParseArgs reads argv into Args: the subcommand and its positional arguments
// in `positional` (positional[0] is the subcommand), each option into its field. An option
// another subcommand has but this one has not is an error, as is an unknown subcommand;
// `--flag=value` and `--flag value` both work, and the global options (--plugin-path,
// --plugin, --plugins, --log-level) go before or after the subcommand. A subcommand that
// is not rill's own may be a plugin's: ParseArgs takes the global options out and leaves
// the rest to it (plugin_command). Errors throw
// UsageError with a message that starts "rill SUBCOMMAND:" (or "rill:") and says where
// that subcommand's help is. --help anywhere sets `help` and `help_text` (the help of the
// subcommand it follows); --version sets `version`.
#ifndef RILL_CORE_CLI_ARGS_H_
#define RILL_CORE_CLI_ARGS_H_

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace rill::core {

// Bad usage: rill prints it and exits with status 2.
class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::vector<std::string> positional;  // the subcommand, then its arguments
  std::vector<std::string> plugin_dirs, plugin_files, enable, fetch, feed, feed_lod;
  std::vector<std::string> parameters, pservers, passthrough;
  std::string trainers, deadline_ms, log_dir, transport, block, profile, mode, max_staleness;
  std::string checkpoint_dir, checkpoint_every;
  std::string model_filename, params_filename;
  std::string save_dir, output, loss, sgd, startup, iterations = "1", print_every = "0", device = "cpu", workers = "0",
                                                    malloc = "tuned", log_level = "warn";
  bool help = false, version = false, profile_summary = false, allow_model_files = false;
  // positional[0] is not one of rill's own commands: a plugin's (Registry::FindCommand),
  // given positional[1...] as they came, or an unknown one.
  bool plugin_command = false;
  std::string help_text;
};

Args ParseArgs(int argc, char** argv);

// rill's own subcommands, which no plugin's command may take (Registry::ReserveCommands).
const std::set<std::string>& BuiltinCommands();

}  // namespace rill::core

#endif  // RILL_CORE_CLI_ARGS_H_
