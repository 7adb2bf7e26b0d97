// The host side of rill/abi.h. Every function here is called from plugin code: none may
// throw (failures become statuses) and none may trust a pointer beyond what abi.h promises.
#include "core/abi/host_api.h"

#include <atomic>
#include <cstddef>
#include <cstring>

#include "core/abi/status.h"
#include "core/log.h"
#include "core/registry/attribute.h"
#include "core/runtime/executor.h"
#include "core/runtime/kernel_context.h"
#include "core/runtime/profiler.h"
#include "core/tasks/scheduler.h"

// The table's offsets are frozen (sdk/abi_manifest.txt records them too): a new version
// appends entries after the last one and pins them the same way.
#define RILL_PIN(field, index) \
  static_assert(offsetof(RillHostApi, field) == 8 + (index) * sizeof(void*), "RillHostApi layout changed: " #field)
static_assert(offsetof(RillHostApi, abi_version) == 0, "RillHostApi layout changed");
static_assert(offsetof(RillHostApi, struct_size) == 4, "RillHostApi layout changed");
// Version 1.
RILL_PIN(status_create, 0);
RILL_PIN(status_code, 1);
RILL_PIN(status_message, 2);
RILL_PIN(status_release, 3);
RILL_PIN(log, 4);
RILL_PIN(register_op, 5);
RILL_PIN(register_kernel, 6);
RILL_PIN(register_var_type, 7);
RILL_PIN(register_device, 8);
RILL_PIN(op_type, 9);
RILL_PIN(op_input_slot, 10);
RILL_PIN(op_output_slot, 11);
RILL_PIN(op_input_count, 12);
RILL_PIN(op_output_count, 13);
RILL_PIN(op_input_name, 14);
RILL_PIN(op_output_name, 15);
RILL_PIN(attr_int, 16);
RILL_PIN(attr_float, 17);
RILL_PIN(attr_bool, 18);
RILL_PIN(attr_string, 19);
RILL_PIN(attr_ints, 20);
RILL_PIN(attr_floats, 21);
RILL_PIN(attr_bools, 22);
RILL_PIN(attr_strings, 23);
RILL_PIN(attr_strings_at, 24);
RILL_PIN(attr_block, 25);
RILL_PIN(attr_blocks, 26);
RILL_PIN(op_block_ops, 27);
RILL_PIN(ctx_op, 28);
RILL_PIN(ctx_scope, 29);
RILL_PIN(ctx_device_id, 30);
RILL_PIN(ctx_input, 31);
RILL_PIN(ctx_output, 32);
RILL_PIN(ctx_input_tensor, 33);
RILL_PIN(ctx_output_allocate, 34);
RILL_PIN(var_is_initialized, 35);
RILL_PIN(var_tensor, 36);
RILL_PIN(var_scalar, 37);
RILL_PIN(var_set_scalar, 38);
RILL_PIN(var_is_selected_rows, 39);
RILL_PIN(var_selected_rows, 40);
RILL_PIN(var_set_selected_rows, 41);
RILL_PIN(var_type_find, 42);
RILL_PIN(var_custom, 43);
RILL_PIN(var_set_custom, 44);
RILL_PIN(var_move, 45);
RILL_PIN(var_copy, 46);
RILL_PIN(var_swap, 47);
RILL_PIN(var_describe, 48);
RILL_PIN(var_new, 49);
RILL_PIN(var_delete, 50);
RILL_PIN(tensor_info, 51);
RILL_PIN(tensor_allocate, 52);
RILL_PIN(tensor_lod_levels, 53);
RILL_PIN(tensor_lod_level, 54);
RILL_PIN(tensor_set_lod_level, 55);
RILL_PIN(scope_new_child, 56);
RILL_PIN(scope_retain, 57);
RILL_PIN(scope_release, 58);
RILL_PIN(scope_find_var, 59);
RILL_PIN(scope_var, 60);
RILL_PIN(ctx_run_block, 61);
RILL_PIN(ctx_run_loop, 62);
RILL_PIN(ctx_go, 63);
RILL_PIN(task_current, 64);
RILL_PIN(task_park, 65);
RILL_PIN(task_unpark, 66);
// Version 2.
RILL_PIN(trace_active, 67);
RILL_PIN(trace_now_ns, 68);
RILL_PIN(trace_span, 69);
RILL_PIN(register_command, 70);
RILL_PIN(var_is_tensor_array, 71);
RILL_PIN(var_tensor_array, 72);
RILL_PIN(var_tensor_array_resize, 73);
RILL_PIN(var_tensor_array_at, 74);
RILL_PIN(var_is_tensor, 75);
RILL_PIN(tensor_truncate_lod, 76);
RILL_PIN(tensor_share, 77);
static_assert(sizeof(RillHostApi) == 8 + 78 * sizeof(void*), "RillHostApi version 2 size changed");
#undef RILL_PIN

// The structs of version 1, as plugins fill and read them: a field may only be appended.
#define RILL_PIN_STRUCT(type, last_field, last_offset, size) \
  static_assert(offsetof(type, last_field) == (last_offset) && sizeof(type) == (size), #type " layout changed")
RILL_PIN_STRUCT(RillTensorInfo, data, 40, 48);
RILL_PIN_STRUCT(RillSlotDef, doc, 16, 24);
RILL_PIN_STRUCT(RillAttrDef, doc, 24, 32);
RILL_PIN_STRUCT(RillOpSchema, grad_outputs, 96, 104);
RILL_PIN_STRUCT(RillScalar, bits, 8, 16);
RILL_PIN_STRUCT(RillKernelDef, scalar, 56, 64);
RILL_PIN_STRUCT(RillVarTypeDef, copy, 32, 40);
RILL_PIN_STRUCT(RillDeviceDef, free_host, 56, 64);
RILL_PIN_STRUCT(RillArg, index, 4, 8);
RILL_PIN_STRUCT(RillPlugin, init, 24, 32);
RILL_PIN_STRUCT(RillCommandDef, run, 40, 48);  // version 2
#undef RILL_PIN_STRUCT

namespace rill::core {
namespace {

Variable* V(RillVariable* v) { return reinterpret_cast<Variable*>(v); }
const Variable* V(const RillVariable* v) { return reinterpret_cast<const Variable*>(v); }
Tensor* T(RillTensor* t) { return reinterpret_cast<Tensor*>(t); }
const Tensor* T(const RillTensor* t) { return reinterpret_cast<const Tensor*>(t); }

RillStatus* NullArg(const char* fn) {
  return new RillStatus{RILL_INVALID_ARGUMENT, std::string(fn) + ": null argument"};
}

// ---- status, log -------------------------------------------------------------------------

RillStatus* StatusCreate(int32_t code, const char* message) { return new RillStatus{code, message ? message : ""}; }
int32_t StatusCode(const RillStatus* s) { return s ? s->code : RILL_OK; }
const char* StatusMessage(const RillStatus* s) { return s ? s->message.c_str() : ""; }
void StatusRelease(RillStatus* s) { delete s; }

void Log(int32_t level, const char* message) {
  static const spdlog::level::level_enum kLevels[] = {spdlog::level::trace, spdlog::level::debug, spdlog::level::info,
                                                      spdlog::level::warn, spdlog::level::err};
  const auto lvl = (level >= 0 && level <= 4) ? kLevels[level] : spdlog::level::info;
  Logger().log(lvl, "{}", message ? message : "");
}

// ---- registration ------------------------------------------------------------------------

RillStatus* RegisterOp(RillRegistrar* reg, const RillOpSchema* schema) {
  if (!reg || !schema) return NullArg("register_op");
  return StatusFromCall([&] {
    OpSchemaEntry e = SchemaFromAbi(*schema, reg->plugin);
    for (const auto& op : reg->ops) {
      if (op.type == e.type)
        throw Error("op '" + e.type + "' registered twice by plugin '" + reg->plugin + "'", RILL_ALREADY_EXISTS);
    }
    reg->ops.push_back(std::move(e));
  });
}

RillStatus* RegisterKernel(RillRegistrar* reg, const RillKernelDef* def) {
  if (!reg || !def) return NullArg("register_kernel");
  return StatusFromCall([&] { reg->kernels.push_back(KernelFromAbi(*def, reg->plugin)); });
}

RillStatus* RegisterVarType(RillRegistrar* reg, const RillVarTypeDef* def) {
  if (!reg || !def) return NullArg("register_var_type");
  return StatusFromCall([&] { reg->var_types.push_back(VarTypeFromAbi(*def, reg->plugin)); });
}

RillStatus* RegisterDevice(RillRegistrar* reg, const RillDeviceDef* def) {
  if (!reg || !def) return NullArg("register_device");
  return StatusFromCall([&] { reg->devices.push_back(DeviceFromAbi(*def, reg->plugin)); });
}

RillStatus* RegisterCommand(RillRegistrar* reg, const RillCommandDef* def) {
  if (!reg || !def) return NullArg("register_command");
  return StatusFromCall([&] {
    CommandEntry e = CommandFromAbi(*def, reg->plugin);
    for (const auto& c : reg->commands) {
      if (c.name == e.name) {
        throw Error("command '" + e.name + "' registered twice by plugin '" + reg->plugin + "'", RILL_ALREADY_EXISTS);
      }
    }
    reg->commands.push_back(std::move(e));
  });
}

// ---- op info and attributes --------------------------------------------------------------

const char* OpType(const RillOpInfo* info) { return info ? info->type.c_str() : ""; }

int32_t OpInputSlot(const RillOpInfo* info, const char* name) { return info && name ? info->InputSlot(name) : -1; }
int32_t OpOutputSlot(const RillOpInfo* info, const char* name) { return info && name ? info->OutputSlot(name) : -1; }
size_t ArgCount(const RillOpInfo::Args* a) { return a ? a->ids.size() : 0; }
const char* ArgName(const RillOpInfo& info, const RillOpInfo::Args* a, size_t i) {
  return (a && i < a->ids.size()) ? info.Name(*a, i).c_str() : nullptr;
}
size_t OpInputCount(const RillOpInfo* info, int32_t slot) { return info ? ArgCount(info->InputAt(slot)) : 0; }
size_t OpOutputCount(const RillOpInfo* info, int32_t slot) { return info ? ArgCount(info->OutputAt(slot)) : 0; }
const char* OpInputName(const RillOpInfo* info, int32_t slot, size_t i) {
  return info ? ArgName(*info, info->InputAt(slot), i) : nullptr;
}
const char* OpOutputName(const RillOpInfo* info, int32_t slot, size_t i) {
  return info ? ArgName(*info, info->OutputAt(slot), i) : nullptr;
}

RillStatus* OpBlockOps(const RillOpInfo* info, int32_t block_idx, const RillOpInfo* const** ops, size_t* count) {
  if (!info || !info->executor || !ops || !count) return NullArg("op_block_ops");
  return StatusFromCall([&] {
    const std::vector<const RillOpInfo*>& all = info->executor->BlockOps(block_idx);
    *ops = all.data();
    *count = all.size();
  });
}

// Finds attribute `name` of one of the accepted types, or returns the error status.
RillStatus* FindAttr(const RillOpInfo* info, const char* name, std::initializer_list<int32_t> types,
                     const AttrValue** out) {
  if (!info || !name || !out) return NullArg("attr getter");
  const AttrValue* v = info->FindAttr(name);
  if (v == nullptr) {
    return new RillStatus{RILL_NOT_FOUND, "op '" + info->type + "' declares no attribute '" + name + "'"};
  }
  for (int32_t t : types) {
    if (v->type == t) {
      *out = v;
      return nullptr;
    }
  }
  return new RillStatus{RILL_INVALID_ARGUMENT, "attribute '" + std::string(name) + "' of op '" + info->type + "' is " +
                                                   AttrTypeName(v->type) + ", read as " + AttrTypeName(*types.begin())};
}

RillStatus* AttrInt(const RillOpInfo* info, const char* name, int64_t* out) {
  const AttrValue* v = nullptr;
  if (RillStatus* st = FindAttr(info, name, {RILL_ATTR_INT, RILL_ATTR_LONG}, &v)) return st;
  *out = v->i;
  return nullptr;
}
RillStatus* AttrFloat(const RillOpInfo* info, const char* name, double* out) {
  const AttrValue* v = nullptr;
  if (RillStatus* st = FindAttr(info, name, {RILL_ATTR_FLOAT}, &v)) return st;
  *out = v->f;
  return nullptr;
}
RillStatus* AttrBool(const RillOpInfo* info, const char* name, int32_t* out) {
  const AttrValue* v = nullptr;
  if (RillStatus* st = FindAttr(info, name, {RILL_ATTR_BOOLEAN}, &v)) return st;
  *out = v->i != 0;
  return nullptr;
}
RillStatus* AttrString(const RillOpInfo* info, const char* name, const char** data, size_t* len) {
  const AttrValue* v = nullptr;
  if (RillStatus* st = FindAttr(info, name, {RILL_ATTR_STRING}, &v)) return st;
  *data = v->s.c_str();
  *len = v->s.size();
  return nullptr;
}
RillStatus* AttrInts(const RillOpInfo* info, const char* name, const int64_t** data, size_t* count) {
  const AttrValue* v = nullptr;
  if (RillStatus* st = FindAttr(info, name, {RILL_ATTR_INTS}, &v)) return st;
  *data = v->ints.data();
  *count = v->ints.size();
  return nullptr;
}
RillStatus* AttrFloats(const RillOpInfo* info, const char* name, const float** data, size_t* count) {
  const AttrValue* v = nullptr;
  if (RillStatus* st = FindAttr(info, name, {RILL_ATTR_FLOATS}, &v)) return st;
  *data = v->floats.data();
  *count = v->floats.size();
  return nullptr;
}
RillStatus* AttrBools(const RillOpInfo* info, const char* name, const uint8_t** data, size_t* count) {
  const AttrValue* v = nullptr;
  if (RillStatus* st = FindAttr(info, name, {RILL_ATTR_BOOLEANS}, &v)) return st;
  *data = v->bools.data();
  *count = v->bools.size();
  return nullptr;
}
RillStatus* AttrStrings(const RillOpInfo* info, const char* name, size_t* count) {
  const AttrValue* v = nullptr;
  if (RillStatus* st = FindAttr(info, name, {RILL_ATTR_STRINGS}, &v)) return st;
  *count = v->strings.size();
  return nullptr;
}
RillStatus* AttrStringsAt(const RillOpInfo* info, const char* name, size_t i, const char** data, size_t* len) {
  const AttrValue* v = nullptr;
  if (RillStatus* st = FindAttr(info, name, {RILL_ATTR_STRINGS}, &v)) return st;
  if (i >= v->strings.size()) {
    return new RillStatus{RILL_OUT_OF_RANGE, "attribute '" + std::string(name) + "' has " +
                                                 std::to_string(v->strings.size()) + " strings"};
  }
  *data = v->strings[i].c_str();
  *len = v->strings[i].size();
  return nullptr;
}
RillStatus* AttrBlock(const RillOpInfo* info, const char* name, int32_t* out) {
  const AttrValue* v = nullptr;
  if (RillStatus* st = FindAttr(info, name, {RILL_ATTR_BLOCK}, &v)) return st;
  *out = static_cast<int32_t>(v->i);
  return nullptr;
}
RillStatus* AttrBlocks(const RillOpInfo* info, const char* name, const int32_t** data, size_t* count) {
  const AttrValue* v = nullptr;
  if (RillStatus* st = FindAttr(info, name, {RILL_ATTR_BLOCKS}, &v)) return st;
  *data = v->blocks.data();
  *count = v->blocks.size();
  return nullptr;
}

// ---- kernel context ------------------------------------------------------------------------

// Fills what `out` has room for (its struct_size) with t's description.
void Describe(const Tensor& t, RillTensorInfo* out) {
  if (!out || out->struct_size < offsetof(RillTensorInfo, data) + sizeof(out->data)) return;
  out->dtype = t.dtype();
  out->device_type = t.place().device_type;
  out->device_id = t.place().device_id;
  out->ndim = t.dims().size();
  out->dims = t.dims().data();
  out->numel = t.numel();
  out->data = t.data();
}

const RillOpInfo* CtxOp(const RillKernelContext* ctx) { return ctx ? ctx->op : nullptr; }
RillScope* CtxScope(RillKernelContext* ctx) { return ctx ? ctx->ExposedScope() : nullptr; }
int32_t CtxDeviceId(const RillKernelContext* ctx) { return ctx ? ctx->device_id : 0; }
RillVariable* CtxInput(RillKernelContext* ctx, int32_t slot, size_t i) {
  return ctx ? reinterpret_cast<RillVariable*>(ctx->At(ctx->op->InputIdAt(slot, i))) : nullptr;
}
RillVariable* CtxOutput(RillKernelContext* ctx, int32_t slot, size_t i) {
  return ctx ? reinterpret_cast<RillVariable*>(ctx->At(ctx->op->OutputIdAt(slot, i))) : nullptr;
}

// "X[0]" for messages; "#3[0]" for a slot handle the op does not have.
std::string ArgLabel(const RillOpInfo::Args* args, int32_t slot, size_t i) {
  return (args ? args->slot : "#" + std::to_string(slot)) + "[" + std::to_string(i) + "]";
}

// ctx_input_tensor and ctx_output_allocate past their hot paths: null arguments, errors,
// and an empty output variable's first tensor. Kept out of line: a kernel makes these calls
// for every argument, and the messages' strings would cost registers and stack on every
// call otherwise.
[[gnu::noinline, gnu::cold]] RillStatus* InputTensorSlow(RillKernelContext* ctx, int32_t slot, size_t i,
                                                         RillTensor** out, RillTensorInfo* info) {
  if (!ctx || !out || !info) return NullArg("ctx_input_tensor");
  const RillOpInfo::Args* args = ctx->op->InputAt(slot);
  if (args == nullptr || i >= args->ids.size()) {
    return new RillStatus{RILL_NOT_FOUND, "op '" + ctx->op->type + "' has no input " + ArgLabel(args, slot, i)};
  }
  Variable* v = ctx->Arg(args, i);
  const std::string& name = ctx->op->Name(*args, i);
  if (v == nullptr) {
    return new RillStatus{RILL_NOT_FOUND, "input " + args->slot + " ('" + name + "') does not exist in any scope"};
  }
  Tensor* t = v->is_tensor() ? v->GetMutableTensor() : nullptr;
  if (t == nullptr || !t->initialized()) {
    return new RillStatus{RILL_FAILED_PRECONDITION, "input " + args->slot + " ('" + name + "') holds " +
                                                        (t                  ? "an empty tensor"
                                                         : v->initialized() ? v->KindName()
                                                                            : "nothing yet") +
                                                        ", not a tensor value"};
  }
  *out = reinterpret_cast<RillTensor*>(t);
  Describe(*t, info);
  return nullptr;
}
[[gnu::noinline, gnu::cold]] RillStatus* OutputTensorSlow(RillKernelContext* ctx, int32_t slot, size_t i,
                                                          RillTensor** out) {
  const RillOpInfo::Args* args = ctx->op->OutputAt(slot);
  if (args == nullptr || i >= args->ids.size()) {
    return new RillStatus{RILL_NOT_FOUND, "op '" + ctx->op->type + "' has no output " + ArgLabel(args, slot, i)};
  }
  Variable* v = ctx->Arg(args, i);
  if (v->is_tensor() || !v->initialized()) {
    *out = reinterpret_cast<RillTensor*>(v->GetMutableTensor());
    return nullptr;
  }
  return new RillStatus{RILL_INVALID_ARGUMENT, "output " + args->slot + " ('" + ctx->op->Name(*args, i) + "') holds " +
                                                   v->KindName() + ", not a tensor"};
}
RillStatus* CtxInputTensor(RillKernelContext* ctx, int32_t slot, size_t i, RillTensor** out, RillTensorInfo* info) {
  if (ctx && out && info) {
    Variable* v = ctx->At(ctx->op->InputIdAt(slot, i));
    Tensor* t = v ? v->GetTensor() : nullptr;
    if (t != nullptr && t->initialized()) {
      *out = reinterpret_cast<RillTensor*>(t);
      Describe(*t, info);
      return nullptr;
    }
  }
  return InputTensorSlow(ctx, slot, i, out, info);
}
RillStatus* CtxOutputAllocate(RillKernelContext* ctx, int32_t slot, size_t i, int32_t dtype, const int64_t* dims,
                              size_t ndim, int32_t device_type, int32_t device_id, RillTensor** out,
                              RillTensorInfo* info) {
  if (!ctx || !out || !info || (!dims && ndim > 0)) return NullArg("ctx_output_allocate");
  Variable* v = ctx->At(ctx->op->OutputIdAt(slot, i));
  if (Tensor* t = v ? v->GetTensor() : nullptr) {
    *out = reinterpret_cast<RillTensor*>(t);
  } else if (RillStatus* st = OutputTensorSlow(ctx, slot, i, out)) {
    return st;
  }
  return StatusFromCall([&] {
    Tensor& t = *T(*out);
    t.Allocate(dtype, dims, ndim, Place{device_type, device_id});
    Describe(t, info);
  });
}

// ---- blocks and tasks ----------------------------------------------------------------------

RillStatus* CtxRunBlock(RillKernelContext* ctx, int32_t block_idx, RillScope* scope) {
  if (!ctx || (scope && !scope->scope)) return NullArg("ctx_run_block");
  return StatusFromCall([&] {
    if (scope != nullptr) {
      ctx->executor->Run(block_idx, scope->scope);
    } else {
      ctx->executor->RunSubBlock(block_idx, ctx->scope->scope);
    }
  });
}
// ctx_run_loop's test before each step, as Executor::RunLoop asks it: the condition's bool
// when it holds one element of bool (a device's copied to the host), else the plugin's
// proceed, whose status becomes the Error that stops the loop.
struct LoopProceed {
  const Variable* condition;
  RillStatus* (*proceed)(void* arg, int32_t* go_on);
  void* arg;
  static bool Ask(void* self) {
    const auto& p = *static_cast<const LoopProceed*>(self);
    if (const Tensor* t = p.condition != nullptr ? p.condition->GetTensor() : nullptr;
        t != nullptr && t->initialized() && t->dtype() == RILL_BOOL && t->numel() == 1) {
      if (t->place().device_type == RILL_CPU) return *static_cast<const bool*>(t->data());
      return *static_cast<const bool*>(t->CopyTo(Place{}).data());
    }
    if (p.proceed == nullptr) {
      throw Error("the loop's condition is not a bool scalar, and no proceed was given", RILL_INVALID_ARGUMENT);
    }
    int32_t go_on = 0;
    if (RillStatus* st = p.proceed(p.arg, &go_on)) ThrowIfError(st);
    return go_on != 0;
  }
};
RillStatus* CtxRunLoop(RillKernelContext* ctx, int32_t block_idx, const RillVariable* condition,
                       RillStatus* (*proceed)(void*, int32_t*), void* arg) {
  if (!ctx) return NullArg("ctx_run_loop");
  return StatusFromCall([&] {
    LoopProceed p{condition != nullptr ? V(condition) : nullptr, proceed, arg};
    ctx->executor->RunLoop(block_idx, ctx->scope->scope, &LoopProceed::Ask, &p);
  });
}
// ---- variables ---------------------------------------------------------------------------

// The variable `find` gives, or NULL when it throws: the entries with no status to
// return hand back NULL when memory runs out (abi.h).
template <class F> RillVariable* VariableOrNull(F&& find) noexcept {
  try {
    return reinterpret_cast<RillVariable*>(find());
  } catch (const std::exception&) {
    return nullptr;
  }
}

int32_t VarIsInitialized(const RillVariable* v) { return v && V(v)->initialized(); }
RillStatus* VarTensor(RillVariable* v, RillTensor** out) {
  if (!v || !out) return NullArg("var_tensor");
  return StatusFromCall([&] { *out = reinterpret_cast<RillTensor*>(V(v)->GetMutableTensor()); });
}
// Types are process-wide (registry.h): a handle stands for its committed definition.
const RillVarType* VarTypeFind(const char* name) {
  const CustomType* type = name ? FindVarType(std::string_view(name)) : nullptr;
  return type ? type->handle : nullptr;
}
RillStatus* VarSetCustom(RillVariable* v, const RillVarType* type, void* value) {
  if (!v || !type) return NullArg("var_set_custom");
  const CustomType* custom = VarTypeOf(type);
  if (custom == nullptr) return new RillStatus{RILL_NOT_FOUND, "var_set_custom: the type is not registered"};
  V(v)->SetCustom(custom, value);
  return nullptr;
}
void* VarCustom(const RillVariable* v, const RillVarType* type) {
  const CustomValue* c = v ? V(v)->GetCustom() : nullptr;
  return c != nullptr && type != nullptr && c->type()->handle == type ? c->value() : nullptr;
}
int32_t VarScalar(const RillVariable* v, int32_t* dtype, uint64_t* bits) {
  return v && dtype && bits && V(v)->GetScalar(dtype, bits) ? 1 : 0;
}
RillStatus* VarSetScalar(RillVariable* v, int32_t dtype, uint64_t bits) {
  if (!v) return NullArg("var_set_scalar");
  RillStatus* st = StatusFromCall([&] { V(v)->SetScalar(dtype, bits); });
  if (st != nullptr) st->message.insert(0, "var_set_scalar: ");
  return st;
}
RillStatus* VarMove(RillVariable* dst, RillVariable* src) {
  if (!dst || !src) return NullArg("var_move");
  V(dst)->MoveFrom(*V(src));
  return nullptr;
}
RillStatus* VarCopy(RillVariable* dst, const RillVariable* src) {
  if (!dst || !src) return NullArg("var_copy");
  return StatusFromCall([&] { V(dst)->CopyFrom(*V(src)); });
}
void VarDescribe(const RillVariable* v, char* buf, size_t cap) {
  if (!buf || cap == 0) return;
  std::string s;
  try {
    s = v ? V(v)->Describe() : "null";
  } catch (const std::exception&) {
    s = "(no memory to describe it)";
  }
  const size_t n = std::min(cap - 1, s.size());
  std::memcpy(buf, s.data(), n);
  buf[n] = '\0';
}

// ---- tensors -----------------------------------------------------------------------------

void TensorInfo(const RillTensor* t, RillTensorInfo* out) {
  if (t) Describe(*T(t), out);
}
RillStatus* TensorAllocate(RillTensor* t, int32_t dtype, const int64_t* dims, size_t ndim, int32_t device_type,
                           int32_t device_id, void** data_out) {
  if (!t || (!dims && ndim > 0)) return NullArg("tensor_allocate");
  return StatusFromCall([&] {
    void* p = T(t)->Allocate(dtype, dims, ndim, Place{device_type, device_id});
    if (data_out) *data_out = p;
  });
}
size_t TensorLodLevels(const RillTensor* t) { return t ? T(t)->lod().size() : 0; }
const uint64_t* TensorLodLevel(const RillTensor* t, size_t level, size_t* count) {
  if (!t || level >= T(t)->lod().size()) {
    if (count) *count = 0;
    return nullptr;
  }
  if (count) *count = T(t)->lod()[level].size();
  return T(t)->lod()[level].data();
}
RillStatus* TensorSetLodLevel(RillTensor* t, size_t level, const uint64_t* offsets, size_t count) {
  if (!t || (!offsets && count > 0)) return NullArg("tensor_set_lod_level");
  auto& lod = T(t)->mutable_lod();
  if (level > lod.size()) {
    return new RillStatus{RILL_OUT_OF_RANGE,
                          "LoD level " + std::to_string(level) + " set before level " + std::to_string(lod.size())};
  }
  if (level == lod.size()) lod.emplace_back();
  lod[level].assign(offsets, offsets + count);
  return nullptr;
}

// ---- scopes ------------------------------------------------------------------------------

RillStatus* ScopeNewChild(RillScope* parent, RillScope** out) {
  if (!parent || !parent->scope || !out) return NullArg("scope_new_child");
  *out = new RillScope{parent->scope->NewChild()};
  return nullptr;
}
RillScope* ScopeRetain(RillScope* s) { return s && s->scope ? new RillScope{s->Owner()} : nullptr; }
void ScopeRelease(RillScope* s) { delete s; }
RillVariable* ScopeFindVar(RillScope* s, const char* name) {
  if (!s || !s->scope || !name) return nullptr;
  return VariableOrNull([&] { return s->scope->FindVar(name); });
}
RillVariable* ScopeVar(RillScope* s, const char* name) {
  if (!s || !s->scope || !name) return nullptr;
  return VariableOrNull([&] { return s->scope->Var(name); });
}
// ---- tasks ---------------------------------------------------------------------------------

RillTask* TaskCurrent() { return CurrentParkable(); }
RillStatus* TaskPark(RillKernelContext* ctx, const char* what, void (*unlock)(void*), void* arg) {
  if (!unlock) return NullArg("task_park");
  return ParkCurrent(ctx ? ctx->op : nullptr, what, unlock, arg);
}
void TaskUnpark(RillTask* task) {
  if (task) task->Unpark();
}
// ctx_go: the bound variables are found (and copied) before anything is started.
RillStatus* CtxGo(RillKernelContext* ctx, int32_t block_idx, const RillArg* bind, size_t count) {
  if (!ctx || (count > 0 && !bind)) return NullArg("ctx_go");
  constexpr size_t kInline = 16;  // a go op binds a few channels; more go to the heap
  uint32_t inline_ids[kInline];
  std::vector<uint32_t> more(count > kInline ? count : 0);
  uint32_t* ids = more.empty() ? inline_ids : more.data();
  for (size_t k = 0; k < count; ++k) {
    ids[k] = ctx->op->InputIdAt(bind[k].slot, bind[k].index);
    if (ctx->At(ids[k]) == nullptr) {
      const RillOpInfo::Args* args = ctx->op->InputAt(bind[k].slot);
      return new RillStatus{RILL_INVALID_ARGUMENT,
                            "ctx_go: input " + ArgLabel(args, bind[k].slot, bind[k].index) +
                                (ids[k] == RillOpInfo::kNoArg
                                     ? " is not an argument of op '" + ctx->op->type + "'"
                                     : " ('" + ctx->op->Name(*args, bind[k].index) + "') does not exist in any scope")};
    }
  }
  return StatusFromCall([&] {
    Executor* executor = ctx->executor;
    executor->CheckBlock(block_idx);
    std::shared_ptr<Scope> child = ctx->ExposedScope()->scope->NewChild();
    Variable* const* frame = ctx->frame;
    for (size_t k = 0; k < count; ++k) {
      // Var, not a plain add: a variable bound twice finds its copy and copies again.
      child->Var((*ctx->frame_names)[ids[k]], ctx->frame_name_bits[ids[k]])->CopyFrom(*frame[ids[k]]);
    }
    SpawnTask(
        [executor, block_idx, s = std::move(child)]() mutable {
          executor->Run(block_idx, s);
          ReleaseLater(std::move(s));
        },
        ctx->op);
  });
}

RillVariable* VarNew() {
  return VariableOrNull([] { return new Variable(); });
}
void VarDelete(RillVariable* v) { delete V(v); }
RillStatus* VarSwap(RillVariable* a, RillVariable* b) {
  if (!a || !b) return NullArg("var_swap");
  V(a)->Swap(*V(b));
  return nullptr;
}

// ---- selected rows -------------------------------------------------------------------------

int32_t VarIsSelectedRows(const RillVariable* v) { return v && V(v)->is_selected_rows() ? 1 : 0; }
RillStatus* VarSelectedRows(RillVariable* v, const int64_t** rows, size_t* count, int64_t* height, RillTensor** value) {
  if (!v || !rows || !count || !height || !value) return NullArg("var_selected_rows");
  if (!V(v)->is_selected_rows()) {
    return new RillStatus{RILL_INVALID_ARGUMENT, "variable holds " + V(v)->KindName() + ", not selected_rows"};
  }
  SelectedRows* s = V(v)->GetMutableSelectedRows();
  *rows = s->rows.data();
  *count = s->rows.size();
  *height = s->height;
  *value = reinterpret_cast<RillTensor*>(&s->value);
  return nullptr;
}
RillStatus* VarSetSelectedRows(RillVariable* v, const int64_t* rows, size_t count, int64_t height, RillTensor** value) {
  if (!v || (!rows && count > 0) || !value) return NullArg("var_set_selected_rows");
  // SelectedRows already held are remade in place, not replaced: whoever holds them (a
  // Python handle from get_selected_rows, a view of their values) still holds this
  // variable's. `rows` may point into them: copied before they change.
  std::vector<int64_t> kept(rows, rows + count);
  if (!V(v)->is_selected_rows()) V(v)->Clear();
  SelectedRows* s = V(v)->GetMutableSelectedRows();
  s->rows = std::move(kept);
  s->height = height;
  s->value = Tensor();
  *value = reinterpret_cast<RillTensor*>(&s->value);
  return nullptr;
}

// ---- kinds, whole LoDs and shared memory -------------------------------------------------

int32_t VarIsTensor(const RillVariable* v) { return v && (!V(v)->initialized() || V(v)->GetTensor()) ? 1 : 0; }
RillStatus* TensorTruncateLod(RillTensor* t, size_t levels) {
  if (!t) return NullArg("tensor_truncate_lod");
  auto& lod = T(t)->mutable_lod();
  if (levels < lod.size()) lod.resize(levels);
  return nullptr;
}

RillStatus* TensorShare(RillTensor* dst, const RillTensor* src, const int64_t* dims, size_t ndim) {
  if (!dst || !src) return NullArg("tensor_share");
  return StatusFromCall([&] {
    const Tensor& from = *T(src);
    if (dims == nullptr) {  // src's own shape
      dims = from.dims().data();
      ndim = from.dims().size();
    }
    T(dst)->ShareWith(from, dims, ndim);
  });
}

// ---- tensor arrays --------------------------------------------------------------------------

int32_t VarIsTensorArray(const RillVariable* v) { return v && V(v)->is_tensor_array() ? 1 : 0; }
// The variable's array (made from an empty variable), or a status saying what it holds.
RillStatus* ArrayOf(RillVariable* v, TensorArray** out) {
  if (V(v)->initialized() && !V(v)->is_tensor_array()) {
    return new RillStatus{RILL_INVALID_ARGUMENT, "variable holds " + V(v)->KindName() + ", not a tensor array"};
  }
  *out = V(v)->GetMutableTensorArray();
  return nullptr;
}
RillStatus* VarTensorArray(RillVariable* v, size_t* count) {
  if (!v || !count) return NullArg("var_tensor_array");
  TensorArray* array = nullptr;
  if (RillStatus* st = ArrayOf(v, &array)) return st;
  *count = array->size();
  return nullptr;
}
RillStatus* VarTensorArrayResize(RillVariable* v, size_t count) {
  if (!v) return NullArg("var_tensor_array_resize");
  TensorArray* array = nullptr;
  if (RillStatus* st = ArrayOf(v, &array)) return st;
  return StatusFromCall([&] { array->resize(count); });
}
RillStatus* VarTensorArrayAt(RillVariable* v, size_t i, RillTensor** out) {
  if (!v || !out) return NullArg("var_tensor_array_at");
  TensorArray* array = nullptr;
  if (RillStatus* st = ArrayOf(v, &array)) return st;
  if (i >= array->size()) {
    return new RillStatus{RILL_OUT_OF_RANGE,
                          "entry " + std::to_string(i) + " of a tensor array of " + std::to_string(array->size())};
  }
  *out = reinterpret_cast<RillTensor*>(&(*array)[i]);
  return nullptr;
}

int32_t TraceActive() { return Profiler::Active() ? 1 : 0; }
int64_t TraceNowNs() { return Profiler::NowNs(); }
void TraceSpan(const char* category, const char* name, int64_t start_ns, int64_t end_ns, const char* detail) {
  if (!Profiler::Active() || category == nullptr || name == nullptr) return;
  try {
    Profiler::RecordSpan(category, name, start_ns, end_ns, detail != nullptr ? detail : "");
  } catch (...) {  // out of memory for the trace: the span is lost, the plugin goes on
  }
}

const RillHostApi kTable = {
    RILL_ABI_VERSION,
    sizeof(RillHostApi),
    // Status and logging.
    StatusCreate,
    StatusCode,
    StatusMessage,
    StatusRelease,
    Log,
    // Registration.
    RegisterOp,
    RegisterKernel,
    RegisterVarType,
    RegisterDevice,
    // Op instances.
    OpType,
    OpInputSlot,
    OpOutputSlot,
    OpInputCount,
    OpOutputCount,
    OpInputName,
    OpOutputName,
    AttrInt,
    AttrFloat,
    AttrBool,
    AttrString,
    AttrInts,
    AttrFloats,
    AttrBools,
    AttrStrings,
    AttrStringsAt,
    AttrBlock,
    AttrBlocks,
    OpBlockOps,
    // Kernel context.
    CtxOp,
    CtxScope,
    CtxDeviceId,
    CtxInput,
    CtxOutput,
    CtxInputTensor,
    CtxOutputAllocate,
    // Variables.
    VarIsInitialized,
    VarTensor,
    VarScalar,
    VarSetScalar,
    VarIsSelectedRows,
    VarSelectedRows,
    VarSetSelectedRows,
    VarTypeFind,
    VarCustom,
    VarSetCustom,
    VarMove,
    VarCopy,
    VarSwap,
    VarDescribe,
    VarNew,
    VarDelete,
    // Tensors.
    TensorInfo,
    TensorAllocate,
    TensorLodLevels,
    TensorLodLevel,
    TensorSetLodLevel,
    // Scopes.
    ScopeNewChild,
    ScopeRetain,
    ScopeRelease,
    ScopeFindVar,
    ScopeVar,
    // Blocks and tasks.
    CtxRunBlock,
    CtxRunLoop,
    CtxGo,
    TaskCurrent,
    TaskPark,
    TaskUnpark,
    // Version 2: tracing, commands, tensor arrays, kinds and whole LoDs, shared memory.
    TraceActive,
    TraceNowNs,
    TraceSpan,
    RegisterCommand,
    VarIsTensorArray,
    VarTensorArray,
    VarTensorArrayResize,
    VarTensorArrayAt,
    VarIsTensor,
    TensorTruncateLod,
    TensorShare,
};

}  // namespace

const RillHostApi* HostApiTable() { return &kTable; }

}  // namespace rill::core
