#include "core/registry/registry.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>

#include "core/errors.h"
#include "core/runtime/dtype.h"

// What a RillVarType handle points at: the name it stands for (kept for debuggers) and,
// once a registry has committed a plugin's definition of it, that definition (never freed:
// values anywhere may hold it).
struct __attribute__((visibility("hidden"))) RillVarType {
  std::string name;
  std::atomic<const rill::core::CustomType*> type{nullptr};
};

namespace rill::core {

namespace {

// Whether a plugin-filled struct of `struct_size` bytes includes `field`.
#define RILL_COVERS(s, field) \
  ((s).struct_size >= offsetof(std::remove_reference_t<decltype(s)>, field) + sizeof((s).field))

std::string Str(const char* s) { return s ? s : ""; }

// The slot names of a comma-separated list (RillOpSchemaDef's grad_inputs/grad_outputs);
// blanks are ignored, empty entries skipped.
std::vector<std::string> SlotList(const char* list) {
  std::vector<std::string> out(1);
  for (const char* c = list != nullptr ? list : ""; *c != '\0'; ++c) {
    if (*c == ',') {
      if (!out.back().empty()) out.emplace_back();
    } else if (*c != ' ') {
      out.back() += *c;
    }
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

// Serialises installing variable types' definitions in their handles.
std::mutex g_var_type_install_mu;

// Installs `t`'s definition in its handle unless the same plugin's is there; throws when
// another plugin's is.
void InstallVarType(const CustomType& t) {
  std::lock_guard lock(g_var_type_install_mu);
  auto& slot = const_cast<RillVarType*>(t.handle)->type;
  if (const CustomType* existing = slot.load(std::memory_order_relaxed)) {
    if (existing->plugin == t.plugin) return;
    throw Error("variable type '" + t.name + "' is registered by both plugin '" + existing->plugin + "' and plugin '" +
                    t.plugin + "'",
                RILL_ALREADY_EXISTS);
  }
  slot.store(new CustomType(t), std::memory_order_release);
}

// The plugin whose definition of variable type `t` is installed, or "" if none is.
std::string InstalledVarTypePlugin(const CustomType& t) {
  const CustomType* existing = t.handle->type.load(std::memory_order_acquire);
  return existing != nullptr ? existing->plugin : "";
}

std::vector<SlotSpec> Slots(const RillSlotDef* defs, size_t n, const std::string& op, const char* kind) {
  std::vector<SlotSpec> out;
  for (size_t i = 0; i < n; ++i) {
    if (defs[i].name == nullptr || *defs[i].name == '\0') {
      throw Error("op '" + op + "': " + kind + " slot " + std::to_string(i) + " has no name");
    }
    for (const auto& s : out) {
      if (s.name == defs[i].name) {
        throw Error("op '" + op + "': " + kind + " slot '" + s.name + "' declared twice");
      }
    }
    out.push_back({defs[i].name, defs[i].flags, Str(defs[i].doc)});
  }
  return out;
}

}  // namespace

const SlotSpec* OpSchemaEntry::FindInput(const std::string& name) const {
  for (const auto& s : inputs)
    if (s.name == name) return &s;
  return nullptr;
}

const SlotSpec* OpSchemaEntry::FindOutput(const std::string& name) const {
  for (const auto& s : outputs)
    if (s.name == name) return &s;
  return nullptr;
}

int OpSchemaEntry::AttrIndex(const std::string& name) const {
  for (size_t i = 0; i < attrs.size(); ++i)
    if (attrs[i].name == name) return static_cast<int>(i);
  return -1;
}

OpSchemaEntry SchemaFromAbi(const RillOpSchema& s, const std::string& plugin) {
  if (!RILL_COVERS(s, kernel_dtype_source)) {
    throw Error("op schema struct too small (struct_size " + std::to_string(s.struct_size) + ")");
  }
  OpSchemaEntry e;
  e.type = Str(s.type);
  if (e.type.empty()) throw Error("op schema without a type name");
  e.doc = Str(s.doc);
  e.plugin = plugin;
  e.inputs = Slots(s.inputs, s.num_inputs, e.type, "input");
  e.outputs = Slots(s.outputs, s.num_outputs, e.type, "output");
  for (size_t i = 0; i < s.num_attrs; ++i) {
    const RillAttrDef& a = s.attrs[i];
    if (a.name == nullptr || *a.name == '\0') {
      throw Error("op '" + e.type + "': attribute " + std::to_string(i) + " has no name");
    }
    if (a.type < RILL_ATTR_INT || a.type > RILL_ATTR_BLOCKS) {
      throw Error("op '" + e.type + "': attribute '" + a.name + "' has unknown type " + std::to_string(a.type));
    }
    if (e.AttrIndex(a.name) >= 0) {
      throw Error("op '" + e.type + "': attribute '" + std::string(a.name) + "' declared twice");
    }
    AttrSpec spec;
    spec.name = a.name;
    spec.type = a.type;
    spec.required = a.flags & RILL_ATTR_REQUIRED;
    spec.doc = Str(a.doc);
    try {
      spec.default_value =
          (spec.required || a.default_value == nullptr) ? ZeroAttr(a.type) : ParseAttrDefault(a.type, a.default_value);
    } catch (const Error& err) {
      throw Error("op '" + e.type + "': default of attribute '" + spec.name + "': " + err.what());
    }
    e.attrs.push_back(std::move(spec));
  }
  if (RILL_COVERS(s, grad_outputs) && s.grad_op_type != nullptr) {
    e.grad_op_type = s.grad_op_type;
    e.grad_inputs = SlotList(s.grad_inputs);
    e.grad_outputs = SlotList(s.grad_outputs);
    for (const auto& slot : e.grad_inputs) {
      const bool is_grad = slot.size() > 5 && slot.compare(slot.size() - 5, 5, "@GRAD") == 0;
      const std::string fwd = is_grad ? slot.substr(0, slot.size() - 5) : slot;
      if (is_grad ? e.FindOutput(fwd) == nullptr : (e.FindInput(fwd) == nullptr && e.FindOutput(fwd) == nullptr)) {
        throw Error("op '" + e.type + "': gradient input '" + slot + "' names no slot");
      }
    }
    for (const auto& slot : e.grad_outputs) {
      if (e.FindInput(slot) == nullptr)
        throw Error("op '" + e.type + "': gradient output '" + slot + "' names no input slot");
    }
  }
  e.dtype_source = Str(s.kernel_dtype_source);
  if (!e.dtype_source.empty()) {
    const bool is_attr = e.dtype_source.rfind("attr:", 0) == 0;
    const bool known = is_attr ? e.AttrIndex(e.dtype_source.substr(5)) >= 0 : e.FindInput(e.dtype_source) != nullptr;
    if (!known) {
      throw Error("op '" + e.type + "': kernel dtype source '" + e.dtype_source + "' names no declared " +
                  (is_attr ? "attribute" : "input slot"));
    }
  }
  return e;
}

KernelEntry KernelFromAbi(const RillKernelDef& d, const std::string& plugin) {
  if (!RILL_COVERS(d, destroy)) {
    throw Error("kernel struct too small (struct_size " + std::to_string(d.struct_size) + ")");
  }
  KernelEntry k;
  k.op_type = Str(d.op_type);
  if (k.op_type.empty()) throw Error("kernel without an op type");
  if (d.compute == nullptr) throw Error("kernel for '" + k.op_type + "' has no compute function");
  if (d.device_type < RILL_CPU || d.device_type >= RILL_MAX_DEVICE_TYPES) {
    throw Error("kernel for '" + k.op_type + "': unknown device type " + std::to_string(d.device_type));
  }
  if (d.dtype != RILL_ANY_DTYPE && !IsTensorDataType(d.dtype)) {
    throw Error("kernel for '" + k.op_type + "': unknown dtype " + std::to_string(d.dtype));
  }
  k.device_type = d.device_type;
  k.dtype = d.dtype;
  k.user_data = d.user_data;
  k.create = d.create;
  k.compute = d.compute;
  k.destroy = d.destroy;
  k.scalar = RILL_COVERS(d, scalar) ? d.scalar : nullptr;
  k.plugin = plugin;
  return k;
}

CustomType VarTypeFromAbi(const RillVarTypeDef& d, const std::string& plugin) {
  if (!RILL_COVERS(d, describe)) {
    throw Error("variable type struct too small (struct_size " + std::to_string(d.struct_size) + ")");
  }
  if (d.name == nullptr || *d.name == '\0') throw Error("variable type without a name");
  return CustomType{
      VarTypeHandle(d.name), d.name, plugin, d.destroy, d.describe, RILL_COVERS(d, copy) ? d.copy : nullptr};
}

CommandEntry CommandFromAbi(const RillCommandDef& d, const std::string& plugin) {
  if (!RILL_COVERS(d, run)) {
    throw Error("command struct too small (struct_size " + std::to_string(d.struct_size) + ")");
  }
  const std::string name = d.name != nullptr ? d.name : "";
  const bool well_formed =
      !name.empty() && name[0] >= 'a' && name[0] <= 'z' && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      });
  if (!well_formed) throw Error("command name '" + name + "' is not of the form [a-z][a-z0-9-]*");
  if (d.run == nullptr) throw Error("command '" + name + "' has no run function");
  return CommandEntry{
      name, d.summary != nullptr ? d.summary : "", d.usage != nullptr ? d.usage : "", d.user_data, d.run, plugin};
}

namespace {
std::mutex g_handles_mu;
std::map<std::string, std::unique_ptr<RillVarType>, std::less<>>& Handles() {
  static auto* handles = new std::map<std::string, std::unique_ptr<RillVarType>, std::less<>>;  // never freed
  return *handles;
}
}  // namespace

const RillVarType* VarTypeHandle(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_handles_mu);
  auto& h = Handles()[name];
  if (!h) {
    h = std::make_unique<RillVarType>();
    h->name = name;
  }
  return h.get();
}

const CustomType* VarTypeOf(const RillVarType* handle) {
  return handle != nullptr ? handle->type.load(std::memory_order_acquire) : nullptr;
}

const CustomType* FindVarType(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_handles_mu);
  const auto it = Handles().find(name);
  return it != Handles().end() ? VarTypeOf(it->second.get()) : nullptr;
}

std::string Registry::KernelKey(const std::string& op, int32_t device, int32_t dtype) {
  return op + "/" + std::to_string(device) + "/" + std::to_string(dtype);
}

void Registry::Commit(const std::vector<const PluginRegistration*>& regs) {
  // Check everything first so that a failure changes nothing.
  std::map<std::string, std::string> new_ops, new_kernels, new_types, new_commands;  // key -> plugin
  const auto check_dup = [](std::map<std::string, std::string>& fresh, const std::string& key,
                            const std::string& existing, const std::string& plugin, const std::string& what) {
    const std::string& other = !existing.empty() ? existing : fresh[key];
    if (!other.empty()) {
      throw Error(what + " is registered by both plugin '" + other + "' and plugin '" + plugin + "'",
                  RILL_ALREADY_EXISTS);
    }
    fresh[key] = plugin;
  };
  for (const auto* r : regs) {
    for (const auto& op : r->ops) {
      auto it = ops_.find(op.type);
      check_dup(new_ops, op.type, it == ops_.end() ? "" : it->second->plugin, r->plugin, "op '" + op.type + "'");
    }
    for (const auto& t : r->var_types) {  // a name is one plugin's in every registry of the process
      const std::string installed = InstalledVarTypePlugin(t);
      check_dup(new_types, t.name, installed == r->plugin ? "" : installed, r->plugin,
                "variable type '" + t.name + "'");
    }
    for (const auto& c : r->commands) {
      if (reserved_commands_.count(c.name)) {
        throw Error("plugin '" + r->plugin + "' registers command '" + c.name + "', which is one of rill's own",
                    RILL_ALREADY_EXISTS);
      }
      auto it = commands_.find(c.name);
      check_dup(new_commands, c.name, it == commands_.end() ? "" : it->second.plugin, r->plugin,
                "command '" + c.name + "'");
    }
  }
  for (const auto* r : regs) {
    for (const auto& k : r->kernels) {
      if (!ops_.count(k.op_type) && !new_ops.count(k.op_type)) {
        throw Error(
            "plugin '" + r->plugin + "' registers a kernel for op '" + k.op_type + "', which no plugin declares",
            RILL_NOT_FOUND);
      }
      const std::string key = KernelKey(k.op_type, k.device_type, k.dtype);
      auto it = kernels_.find(key);
      check_dup(new_kernels, key, it == kernels_.end() ? "" : it->second.plugin, r->plugin,
                "kernel for op '" + k.op_type + "' (" + DeviceName(k.device_type) + ", " + DataTypeName(k.dtype) + ")");
    }
  }
  // Devices and variable types are process-wide; installing checks them against every
  // plugin ever loaded.
  for (const auto* r : regs) {
    for (const auto& d : r->devices) InstallDevice(d);
    for (const auto& t : r->var_types) InstallVarType(t);
  }
  for (const auto* r : regs) {
    for (const auto& op : r->ops) ops_[op.type] = std::make_unique<OpSchemaEntry>(op);
    for (const auto& c : r->commands) commands_[c.name] = c;
  }
  for (const auto* r : regs) {
    for (const auto& k : r->kernels) {
      auto [it, inserted] = kernels_.emplace(KernelKey(k.op_type, k.device_type, k.dtype), k);
      kernels_by_op_[k.op_type].push_back(&it->second);
    }
  }
}

void Registry::AddHints(const PluginRegistration& r) {
  for (const auto& op : r.ops) hints_.emplace(op.type, r.plugin);
}

const OpSchemaEntry* Registry::FindOp(const std::string& type) const {
  auto it = ops_.find(type);
  return it == ops_.end() ? nullptr : it->second.get();
}

const CommandEntry* Registry::FindCommand(const std::string& name) const {
  auto it = commands_.find(name);
  return it == commands_.end() ? nullptr : &it->second;
}

std::vector<const CommandEntry*> Registry::AllCommands() const {
  std::vector<const CommandEntry*> out;
  for (const auto& [name, command] : commands_) out.push_back(&command);
  return out;
}

const KernelEntry* Registry::FindKernel(const std::string& op, int32_t device, int32_t dtype) const {
  auto it = kernels_.find(KernelKey(op, device, dtype));
  if (it != kernels_.end()) return &it->second;
  it = kernels_.find(KernelKey(op, device, RILL_ANY_DTYPE));
  return it == kernels_.end() ? nullptr : &it->second;
}

std::vector<const KernelEntry*> Registry::KernelsOf(const std::string& op) const {
  auto it = kernels_by_op_.find(op);
  return it == kernels_by_op_.end() ? std::vector<const KernelEntry*>{} : it->second;
}

std::vector<const OpSchemaEntry*> Registry::AllOps() const {
  std::vector<const OpSchemaEntry*> out;
  for (const auto& [type, entry] : ops_) out.push_back(entry.get());
  return out;
}

std::string Registry::DisabledPluginOf(const std::string& type) const {
  auto it = hints_.find(type);
  return it == hints_.end() ? "" : it->second;
}

std::string Registry::EnabledPluginList() const {
  std::string loaded;
  for (const auto& p : enabled_) loaded += (loaded.empty() ? "" : ", ") + p;
  return loaded.empty() ? "none" : loaded;
}

std::string Registry::UnknownOpMessage(const std::string& type) const {
  const std::string plugin = DisabledPluginOf(type);
  if (!plugin.empty()) {
    return "op '" + type + "' is provided by plugin '" + plugin + "', which is not enabled (see --plugins)";
  }
  return "op '" + type + "' is not provided by any loaded plugin (loaded: " + EnabledPluginList() + ")";
}

}  // namespace rill::core
