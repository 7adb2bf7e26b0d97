// core/loader/plugin_loader.h — finding, loading and initializing plugins.
//
// Contract: LoadPlugins opens every plugin it is asked for (RTLD_LOCAL, via Boost.DLL),
// checks its entry point and ABI version, runs its init into a private registration, and
// commits the registrations of the enabled plugins to the registry all at once. Any
// problem is an Error whose message names the file and says what is wrong: not a shared
// library, no Rill entry point, ABI newer than the host's, init failed, or an op
// registered by two plugins. Loaded libraries are never unloaded.
#ifndef RILL_CORE_LOADER_PLUGIN_LOADER_H_
#define RILL_CORE_LOADER_PLUGIN_LOADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/registry/registry.h"

namespace rill::core {

struct LoadOptions {
  std::vector<std::string> dirs;    // every *.so file in each directory
  std::vector<std::string> files;   // single plugin files
  std::vector<std::string> enable;  // names of plugins to enable; empty: all
  // The host's own ops too; false when adding plugins to a registry that has them.
  bool builtin = true;
};

struct PluginInfo {
  std::string name;
  std::string version;
  std::string path;  // "(built in)" for the host's own ops
  uint32_t abi_version = 0;
  bool enabled = true;
  std::vector<std::string> ops;
};

// Loads the host's built-in ops and the plugins `options` names into `registry`. Called
// again on the same registry (builtin = false), it adds plugins; an op a loaded plugin
// already registers is an error and changes nothing.
std::vector<PluginInfo> LoadPlugins(Registry& registry, const LoadOptions& options);

// The directory of plugins shipped beside the running executable:
// <exe dir>/../lib/rill/plugins (the same in a build tree and an install prefix).
std::string DefaultPluginDir();

// What `rill` loads when given no --plugin-path: RILL_PLUGIN_PATH's directories
// (colon-separated) if set, else DefaultPluginDir(). Throws when it is set but names no
// directory ("::"): loading no plugin silently would surprise.
std::vector<std::string> PluginDirsFromEnvironment();

}  // namespace rill::core

#endif  // RILL_CORE_LOADER_PLUGIN_LOADER_H_
