// core/registry/registry.h — every op schema, kernel and variable type the host knows.
//
// Contract: plugins register into a PluginRegistration (the ABI's RillRegistrar) during
// init; the loader then commits whole registrations, so a plugin that fails contributes
// nothing. A second registration of an op, kernel or variable type is an error naming both
// plugins. Ops of plugins that were found but not enabled are remembered only as hints
// for "unknown op" messages. After start-up the registry is read-only and so safe to read
// from any thread.
#ifndef RILL_CORE_REGISTRY_REGISTRY_H_
#define RILL_CORE_REGISTRY_REGISTRY_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/registry/attribute.h"
#include "core/runtime/device.h"
#include "core/runtime/variable.h"
#include "rill/abi.h"

namespace rill::core {

struct SlotSpec {
  std::string name;
  uint32_t flags = 0;
  std::string doc;
  bool optional() const { return flags & RILL_SLOT_OPTIONAL; }
  bool duplicable() const { return flags & RILL_SLOT_DUPLICABLE; }
};

struct AttrSpec {
  std::string name;
  int32_t type = RILL_ATTR_INT;
  bool required = false;
  AttrValue default_value;
  std::string doc;
};

struct OpSchemaEntry {
  std::string type;
  std::string doc;
  std::string plugin;
  std::vector<SlotSpec> inputs, outputs;
  std::vector<AttrSpec> attrs;
  std::string dtype_source;  // input slot name, "attr:NAME", or empty
  // Gradient (see RillOpSchema): empty grad_op_type means not differentiable.
  std::string grad_op_type;
  std::vector<std::string> grad_inputs, grad_outputs;

  const SlotSpec* FindInput(const std::string& name) const;
  const SlotSpec* FindOutput(const std::string& name) const;
  int AttrIndex(const std::string& name) const;  // -1 if undeclared
};

struct KernelEntry {
  std::string op_type;
  int32_t device_type = RILL_CPU;
  int32_t dtype = RILL_ANY_DTYPE;
  void* user_data = nullptr;
  RillKernelCreateFn create = nullptr;
  RillKernelComputeFn compute = nullptr;
  RillKernelDestroyFn destroy = nullptr;
  RillKernelScalarFn scalar = nullptr;  // optional; the executor's scalar path (abi.h)
  std::string plugin;
};

// A subcommand of the `rill` tool a plugin provides (abi.h, RillCommandDef).
struct CommandEntry {
  std::string name, summary, usage;
  void* user_data = nullptr;
  RillStatus* (*run)(void* user_data, int32_t argc, const char* const* argv) = nullptr;
  std::string plugin;
};

}  // namespace rill::core

// What one plugin registers during its init (the ABI's opaque registrar).
struct RillRegistrar {
  std::string plugin;
  std::vector<rill::core::OpSchemaEntry> ops;
  std::vector<rill::core::KernelEntry> kernels;
  std::vector<rill::core::CustomType> var_types;
  std::vector<rill::core::Device> devices;
  std::vector<rill::core::CommandEntry> commands;
};

namespace rill::core {

using PluginRegistration = ::RillRegistrar;

// Builds a schema entry from the ABI struct, reading only fields `struct_size` covers.
OpSchemaEntry SchemaFromAbi(const RillOpSchema& schema, const std::string& plugin);
KernelEntry KernelFromAbi(const RillKernelDef& def, const std::string& plugin);
CustomType VarTypeFromAbi(const RillVarTypeDef& def, const std::string& plugin);
CommandEntry CommandFromAbi(const RillCommandDef& def, const std::string& plugin);
// Variable types are process-wide, as devices are (core/runtime/device.h): the ABI handle
// of type `name` is one per name for the life of the process (so a plugin's handle matches
// values made under any registry), and once a registry commits a plugin's definition of
// the type, the handle stands for that definition. A type name is one plugin's: a registry
// committing another plugin's type of the same name fails, as for a duplicate op.
const RillVarType* VarTypeHandle(const std::string& name);
// The definition `handle` stands for; nullptr while no registry has committed one.
const CustomType* VarTypeOf(const RillVarType* handle);
// The committed definition of type `name`; nullptr if none.
const CustomType* FindVarType(std::string_view name);

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Adds the schemas and variable types of each registration, then the kernels (a kernel
  // may be for another plugin's op). All or nothing: throws Error and changes nothing on a
  // duplicate or on a kernel for an op nobody declares.
  void Commit(const std::vector<const PluginRegistration*>& registrations);
  // Remembers the ops of a plugin that was found but not enabled.
  void AddHints(const PluginRegistration& registration);

  const OpSchemaEntry* FindOp(const std::string& type) const;
  // Exact (device, dtype) first, then the device's RILL_ANY_DTYPE kernel; nullptr if none.
  const KernelEntry* FindKernel(const std::string& op, int32_t device, int32_t dtype) const;
  std::vector<const KernelEntry*> KernelsOf(const std::string& op) const;
  std::vector<const OpSchemaEntry*> AllOps() const;  // sorted by type
  // Names no plugin's command may take (the host tool's own): a plugin that registers one
  // fails to load, as for a duplicate.
  void ReserveCommands(std::set<std::string> names) { reserved_commands_ = std::move(names); }
  const CommandEntry* FindCommand(const std::string& name) const;  // nullptr if none
  std::vector<const CommandEntry*> AllCommands() const;            // sorted by name

  // Why `type` is unknown: which disabled plugin has it, or that no loaded plugin does.
  std::string UnknownOpMessage(const std::string& type) const;
  // The plugin that was found but not enabled and has op `type`; empty if none.
  std::string DisabledPluginOf(const std::string& type) const;
  // "builtin, csp, math": the enabled plugins, for messages; "none" if there are none.
  std::string EnabledPluginList() const;
  void set_enabled_plugins(std::vector<std::string> names) { enabled_ = std::move(names); }
  const std::vector<std::string>& enabled_plugins() const { return enabled_; }

 private:
  static std::string KernelKey(const std::string& op, int32_t device, int32_t dtype);
  std::map<std::string, std::unique_ptr<OpSchemaEntry>> ops_;
  std::map<std::string, KernelEntry> kernels_;  // by KernelKey
  std::map<std::string, std::vector<const KernelEntry*>> kernels_by_op_;
  std::map<std::string, CommandEntry> commands_;
  std::set<std::string> reserved_commands_;
  std::map<std::string, std::string> hints_;  // op type -> plugin that was not enabled
  std::vector<std::string> enabled_;
};

}  // namespace rill::core

#endif  // RILL_CORE_REGISTRY_REGISTRY_H_
