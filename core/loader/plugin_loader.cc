#include "core/loader/plugin_loader.h"

#define BOOST_DLL_USE_STD_FS
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>

#include "core/abi/host_api.h"
#include "core/abi/status.h"
#include "core/errors.h"
#include "core/log.h"

// The host's built-in ops (core/ops), registered through the same ABI as any plugin.
extern "C" const RillPlugin* RillGetBuiltinPlugin(void);

namespace rill::core {

namespace fs = std::filesystem;

namespace {

// Libraries stay loaded for the life of the process: kernels, kernel state and custom
// values they made may be alive anywhere. Deliberately never freed.
std::vector<boost::dll::shared_library>& KeptLibraries() {
  static auto* libs = new std::vector<boost::dll::shared_library>();
  return *libs;
}

struct Candidate {
  PluginInfo info;
  const RillPlugin* plugin = nullptr;
  PluginRegistration registration;
};

const RillPlugin* OpenPlugin(const std::string& path) {
  boost::dll::shared_library lib;
  try {
    lib.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    throw Error("plugin '" + path + "' is not a loadable shared library: " + e.what(), RILL_INVALID_ARGUMENT);
  }
  if (!lib.has(RILL_ENTRY_POINT_NAME)) {
    throw Error("plugin '" + path +
                    "' has no Rill entry point '" RILL_ENTRY_POINT_NAME
                    "' (not a Rill plugin, or built without RILL_PLUGIN)",
                RILL_NOT_FOUND);
  }
  auto entry = lib.get<const RillPlugin*()>(RILL_ENTRY_POINT_NAME);
  const RillPlugin* plugin = entry();
  KeptLibraries().push_back(std::move(lib));
  return plugin;
}

void CheckEntry(const RillPlugin* p, const std::string& path) {
  if (p == nullptr) throw Error("plugin '" + path + "': " RILL_ENTRY_POINT_NAME " returned null");
  if (p->struct_size < offsetof(RillPlugin, init) + sizeof(p->init)) {
    throw Error("plugin '" + path + "': RillPlugin struct too small (struct_size " + std::to_string(p->struct_size) +
                ")");
  }
  const std::string name = p->name ? p->name : "";
  if (p->abi_version > RILL_ABI_VERSION) {
    throw Error("plugin '" + name + "' (" + path + ") needs Rill ABI version " + std::to_string(p->abi_version) +
                    "; this host serves versions 1 to " + std::to_string(RILL_ABI_VERSION) +
                    ": upgrade rill, or rebuild the plugin declaring the version it needs (RILL_PLUGIN_NEEDS_ABI)",
                RILL_FAILED_PRECONDITION);
  }
  if (p->abi_version == 0) throw Error("plugin '" + path + "' declares ABI version 0, which does not exist");
  if (name.empty()) throw Error("plugin '" + path + "' has no name");
  if (p->init == nullptr) throw Error("plugin '" + name + "' (" + path + ") has no init function");
}

void Initialize(Candidate& c) {
  c.registration.plugin = c.info.name;
  RillStatus* st = c.plugin->init(HostApiTable(), &c.registration);
  ThrowIfError(st, "plugin '" + c.info.name + "' (" + c.info.path + ") failed to initialize: ");
  for (const auto& op : c.registration.ops) c.info.ops.push_back(op.type);
}

// What a path that is not a regular file is, for messages; nullptr for a regular file (or a
// link to one). Only regular files are opened: dlopen on a FIFO blocks until a writer comes.
const char* NotARegularFile(const fs::path& path) {
  std::error_code ec;
  switch (fs::status(path, ec).type()) {
    case fs::file_type::regular: return nullptr;
    case fs::file_type::directory: return "a directory";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::block: return "a block device";
    case fs::file_type::character: return "a character device";
    case fs::file_type::not_found: return "a broken link";
    default: return "not a regular file";
  }
}

std::vector<std::string> PluginFilesIn(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error("plugin directory '" + dir + "' does not exist or is not a directory", RILL_NOT_FOUND);
  }
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".so") continue;
    if (const char* kind = NotARegularFile(entry.path())) {
      throw Error("plugin directory '" + dir + "' holds '" + entry.path().filename().string() + "', which is " + kind +
                      ", not a shared library: remove it or load plugins from another directory",
                  RILL_INVALID_ARGUMENT);
    }
    files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::vector<PluginInfo> LoadPlugins(Registry& registry, const LoadOptions& options) {
  std::vector<std::string> paths;
  for (const auto& dir : options.dirs) {
    for (auto& f : PluginFilesIn(dir)) paths.push_back(std::move(f));
  }
  for (const auto& f : options.files) {
    std::error_code ec;
    if (!fs::exists(f, ec)) throw Error("plugin file '" + f + "' does not exist", RILL_NOT_FOUND);
    if (const char* kind = NotARegularFile(f)) {
      throw Error("plugin file '" + f + "' is " + kind + ", not a shared library", RILL_INVALID_ARGUMENT);
    }
    paths.push_back(f);
  }

  std::vector<std::unique_ptr<Candidate>> candidates;
  if (options.builtin) {
    auto builtin = std::make_unique<Candidate>();
    builtin->plugin = RillGetBuiltinPlugin();
    builtin->info.path = "(built in)";
    candidates.push_back(std::move(builtin));
  }

  std::set<std::string> seen_files;
  for (const auto& path : paths) {
    std::error_code ec;
    const std::string canonical = fs::weakly_canonical(path, ec).string();
    if (!seen_files.insert(ec ? path : canonical).second) continue;
    auto c = std::make_unique<Candidate>();
    c->info.path = path;
    c->plugin = OpenPlugin(path);
    CheckEntry(c->plugin, path);
    candidates.push_back(std::move(c));
  }

  std::vector<PluginInfo> infos;
  std::vector<const PluginRegistration*> enabled;
  std::vector<std::string> enabled_names;
  for (auto& c : candidates) {
    c->info.name = c->plugin->name;
    c->info.version = c->plugin->version ? c->plugin->version : "";
    c->info.abi_version = c->plugin->abi_version;
    for (const auto& other : infos) {
      if (other.name == c->info.name) {
        throw Error("two plugins are named '" + c->info.name + "': " + other.path + " and " + c->info.path,
                    RILL_ALREADY_EXISTS);
      }
    }
    Initialize(*c);
    const bool builtin_plugin = c->info.path == "(built in)";
    c->info.enabled = builtin_plugin || options.enable.empty() ||
                      std::find(options.enable.begin(), options.enable.end(), c->info.name) != options.enable.end();
    if (c->info.enabled) {
      enabled.push_back(&c->registration);
      enabled_names.push_back(c->info.name);
    } else {
      registry.AddHints(c->registration);
    }
    Logger().debug("plugin '{}' {} from {}: {} ops{}", c->info.name, c->info.version, c->info.path, c->info.ops.size(),
                   c->info.enabled ? "" : " (not enabled)");
    infos.push_back(c->info);
  }
  for (const auto& want : options.enable) {
    if (std::find(enabled_names.begin(), enabled_names.end(), want) == enabled_names.end()) {
      throw Error("--plugins names '" + want + "', but no plugin of that name was found", RILL_NOT_FOUND);
    }
  }
  registry.Commit(enabled);
  if (!options.builtin) {  // added to the plugins enabled before
    const auto& before = registry.enabled_plugins();
    enabled_names.insert(enabled_names.begin(), before.begin(), before.end());
  }
  registry.set_enabled_plugins(enabled_names);
  return infos;
}

std::string DefaultPluginDir() {
  std::error_code ec;
  const auto exe = boost::dll::program_location(ec);
  if (ec) return "lib/rill/plugins";
  return (exe.parent_path().parent_path() / "lib" / "rill" / "plugins").lexically_normal().string();
}

std::vector<std::string> PluginDirsFromEnvironment() {
  const char* env = std::getenv("RILL_PLUGIN_PATH");
  if (env == nullptr || *env == '\0') return {DefaultPluginDir()};
  std::vector<std::string> dirs;
  std::string cur;
  for (const char* p = env;; ++p) {
    if (*p == ':' || *p == '\0') {
      if (!cur.empty()) dirs.push_back(cur);
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  if (dirs.empty()) {
    throw Error(std::string("RILL_PLUGIN_PATH is '") + env +
                    "', which names no directory: set it to DIR[:DIR...], "
                    "or unset it for the default (" +
                    DefaultPluginDir() + ")",
                RILL_INVALID_ARGUMENT);
  }
  return dirs;
}

}  // namespace rill::core
