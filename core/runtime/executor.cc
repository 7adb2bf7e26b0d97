#include "core/runtime/executor.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <type_traits>
#include <unordered_map>

#include "core/abi/status.h"
#include "core/errors.h"
#include "core/runtime/device.h"
#include "core/runtime/dtype.h"
#include "core/runtime/kernel_context.h"
#include "core/runtime/profiler.h"
#include "core/tasks/scheduler.h"
#include "rill/spin_lock.hpp"

namespace rill::core {

namespace {

// A chosen kernel and the state its create callback made for one op instance. `device` is
// the device asked for (the cache key); entry->device_type is where the kernel runs.
struct KernelInstance {
  const KernelEntry* entry = nullptr;
  int32_t device = RILL_CPU;
  int32_t dtype = RILL_ANY_DTYPE;
  void* state = nullptr;
  // Chosen for an op whose key does not depend on its inputs (no dtype input), on the CPU:
  // while the executor is on the CPU, every run of the op has this key.
  bool cpu_static = false;
  // The kernel's scalar path (abi.h), when it offers one and runs on the CPU; else null.
  RillKernelScalarFn scalar = nullptr;

  ~KernelInstance() {
    if (entry != nullptr && entry->create != nullptr && entry->destroy != nullptr) {
      entry->destroy(state);
    }
  }
};

}  // namespace

struct PreparedOp;
// Runs an op's kernel through its scalar path, or declines (RunScalar).
using ScalarRunner = bool (*)(const PreparedOp&, const KernelInstance&, Variable* const*, int32_t);

struct PreparedOp {
  OpInstance info;
  int dtype_input = -1;                   // index into info.inputs giving the dtype key, or -1
  uint32_t dtype_var = 0;                 // frame index of that input's first variable
  int32_t static_dtype = RILL_ANY_DTYPE;  // key from an attribute (or ANY)
  // The op's arguments as a kernel's scalar path reads them (RillKernelScalarFn): per slot
  // the schema declares, in the schema's order, the frame index of the slot's one
  // variable, or kNoArg for a slot the op leaves empty. `run_scalar` takes the path (or
  // declines); null when no values could take it: a slot holds several variables, or the
  // schema declares more than RILL_SCALAR_MAX_SLOTS inputs or outputs.
  ScalarRunner run_scalar = nullptr;
  uint8_t scalar_ins = 0, scalar_outs = 0;
  int8_t scalar_dtype_in = -1;  // the schema input whose dtype keys the kernel, or -1
  uint32_t scalar_in[RILL_SCALAR_MAX_SLOTS];
  uint32_t scalar_out[RILL_SCALAR_MAX_SLOTS];
  // Per output, the schema input holding the same variable, or -1 (see RunScalar).
  int8_t scalar_out_alias[RILL_SCALAR_MAX_SLOTS];

  // Kernel cache. `last` is the fast path; `instances` owns every kernel chosen so far.
  std::atomic<KernelInstance*> last{nullptr};
  SpinLock mu;  // a byte: a program holds an op per op it has; taken on a kernel's first choice
  std::vector<std::unique_ptr<KernelInstance>> instances;
};

struct Executor::PreparedBlock {
  int32_t idx = 0;
  std::vector<std::string> names;                      // every variable name the ops use
  std::vector<uint64_t> name_bits;                     // Scope::NameBits of each, parallel to names
  std::vector<uint8_t> is_output;                      // parallel to names
  std::vector<std::pair<std::string, bool>> declared;  // (name, persistable)
  std::vector<std::unique_ptr<PreparedOp>> ops;
  std::vector<const RillOpInfo*> infos;  // &ops[i]->info, for BlockOps
  bool declares_locals = false;          // a non-persistable variable in `declared`
  // Set once RunSubBlock found the block would make a variable of its own: every later run
  // as a sub-block gets a scope without trying.
  std::atomic<bool> makes_locals{false};
};

namespace {

// n elements of T for one run (or one loop), on the stack for the usual small block: no
// allocation per run. A parked go block keeps its run's frame on its stack, so the inline
// size is what a go block's names need (a daisy chain's has 5), not a model's loop body.
template <class T> class InlineArray {
 public:
  explicit InlineArray(size_t n) {
    if (n > kInline) heap_.resize(n);
  }
  T* data() { return heap_.empty() ? inline_ : heap_.data(); }

 private:
  static constexpr size_t kInline = 16;
  T inline_[kInline];
  std::vector<T> heap_;
};
using LocalFrame = InlineArray<Variable*>;

[[gnu::noinline]] KernelInstance* ChooseKernel(const Registry& registry, PreparedOp& op, int32_t device,
                                               int32_t dtype) {
  std::lock_guard lock(op.mu);
  for (auto& k : op.instances) {
    if (k->device == device && k->dtype == dtype) return k.get();
  }
  const KernelEntry* entry = registry.FindKernel(op.info.type, device, dtype);
  if (entry == nullptr && device != RILL_CPU) entry = registry.FindKernel(op.info.type, RILL_CPU, dtype);
  if (entry == nullptr) {
    std::string have;
    for (const KernelEntry* k : registry.KernelsOf(op.info.type)) {
      have += (have.empty() ? "" : ", ") + DeviceName(k->device_type) + "/" + DataTypeName(k->dtype);
    }
    throw Error("no " + DeviceName(device) + " kernel for dtype " + DataTypeName(dtype) +
                    " (registered: " + (have.empty() ? "none" : have) + ")",
                RILL_UNIMPLEMENTED);
  }
  auto k = std::make_unique<KernelInstance>();
  k->device = device;
  k->dtype = dtype;
  k->cpu_static = op.dtype_input < 0 && device == RILL_CPU;
  if (entry->create != nullptr) {
    ThrowIfError(entry->create(entry->user_data, &op.info, &k->state), "kernel create failed: ");
  } else {
    k->state = entry->user_data;
  }
  k->scalar = entry->device_type == RILL_CPU ? entry->scalar : nullptr;
  k->entry = entry;
  op.instances.push_back(std::move(k));
  return op.instances.back().get();
}

// Moves every input tensor of `op` that lives elsewhere to `place`, in its variable.
[[gnu::noinline]] void MoveInputsTo(const PreparedOp& op, const RillKernelContext& ctx, const Place& place) {
  for (const auto& args : op.info.inputs) {
    for (size_t i = 0; i < args.ids.size(); ++i) {
      Variable* v = ctx.Arg(&args, i);
      Tensor* t = v && v->is_tensor() ? v->GetMutableTensor() : nullptr;
      if (t != nullptr && t->initialized() && !(t->place() == place)) *t = t->CopyTo(place);
    }
  }
}

// True when `op` has inputs and each is a tensor of at most one element on the CPU: loop
// counters, bounds and conditions. Such an op runs on the CPU even on a device executor,
// so a loop's bookkeeping stays on the host instead of paying a launch and a copy back
// per step (TensorFlow keeps int32 scalars on the host for the same reason).
bool OnlyHostScalarInputs(const PreparedOp& op, const RillKernelContext& ctx) {
  bool any = false;
  for (const auto& args : op.info.inputs) {
    for (size_t i = 0; i < args.ids.size(); ++i) {
      const Variable* v = ctx.Arg(&args, i);
      const Tensor* t = v ? v->GetTensor() : nullptr;
      if (t == nullptr || !t->initialized() || t->numel() > 1 || t->place().device_type != RILL_CPU) return false;
      any = true;
    }
  }
  return any;
}

// RunOps's error paths, out of line: their string temporaries would otherwise widen the
// frame of RunOps (and KernelKey, inlined in it), which every parked task keeps on its
// stack while it waits.
[[noreturn, gnu::noinline, gnu::cold]] void ThrowNoTensorYet(const PreparedOp& op, const RillOpInfo::Args& args) {
  throw Error(
      "input " + args.slot + " ('" + op.info.Name(args, 0) + "') holds no tensor yet, so no kernel can be chosen",
      RILL_FAILED_PRECONDITION);
}
// What an op at nesting `depth` puts before the error it failed with. Every op names
// itself, except that an error from a block nested below kNamedLevels passes the levels
// between up unnamed, marked "… ": the innermost op and the outermost levels stay named,
// and an error 10,000 blocks deep is not 10,000 names long (nor built in 10,000 copies).
constexpr int kNamedLevels = 8;
std::string ErrorContext(const PreparedOp& op, const char* message, int depth) {
  // Named by an op of a nested block: "block 7, op 1 (...): ...", or already elided.
  const bool from_nested_block =
      (std::strncmp(message, "block ", 6) == 0 && std::isdigit(message[6])) || std::strncmp(message, "… ", 4) == 0;
  if (depth <= kNamedLevels || !from_nested_block) return op.info.Where() + ": ";
  return depth == kNamedLevels + 1 ? "… " : "";
}
[[noreturn, gnu::noinline, gnu::cold]] void RethrowNamingOp(const PreparedOp& op, const Error& e, int depth) {
  throw Error(ErrorContext(op, e.what(), depth) + e.what(), e.code());
}
[[noreturn, gnu::noinline, gnu::cold]] void ThrowKernelFailed(const PreparedOp& op, RillStatus* st, int depth) {
  ThrowIfError(st, ErrorContext(op, st->message.c_str(), depth));
  std::abort();  // st is never null here
}

// The (device, dtype) key for this run of `op` on an executor placed on `device`.
std::pair<int32_t, int32_t> KernelKey(const PreparedOp& op, const RillKernelContext& ctx, int32_t device) {
  if (device != RILL_CPU && OnlyHostScalarInputs(op, ctx)) device = RILL_CPU;
  if (op.dtype_input < 0) return {device, op.static_dtype};
  Variable* v = ctx.frame[op.dtype_var];
  const auto& args = op.info.inputs[static_cast<size_t>(op.dtype_input)];
  if (v == nullptr) v = ctx.Arg(&args, 0);
  const Tensor* t = v ? v->GetTensor() : nullptr;
  // SelectedRows (a sparse gradient) choose by their values' dtype; a tensor array by its
  // first written entry's.
  if (t == nullptr && v != nullptr && v->is_selected_rows()) t = &v->GetMutableSelectedRows()->value;
  if (t == nullptr && v != nullptr && v->is_tensor_array()) {
    for (const Tensor& entry : *v->GetMutableTensorArray()) {
      if (entry.initialized()) {
        t = &entry;
        break;
      }
    }
  }
  if (t == nullptr || !t->initialized()) ThrowNoTensorYet(op, args);
  return {device, t->dtype()};
}

// The kernel for this run of `op` on an executor at `place`, with its inputs moved where
// it runs: RunOps's general path. `k` is the kernel the op's last run chose (or null).
[[gnu::noinline]] KernelInstance* KernelFor(const Registry& registry, PreparedOp& op, KernelInstance* k,
                                            RillKernelContext& ctx, const Place& place) {
  const auto [device, dtype] = KernelKey(op, ctx, place.device_type);
  if (k == nullptr || k->dtype != dtype || k->device != device) {
    k = ChooseKernel(registry, op, device, dtype);
    op.last.store(k, std::memory_order_release);
  }
  if (AnyDeviceInstalled()) {
    if (k->entry->device_type != RILL_CPU) {
      ctx.device_id = place.device_id;
      MoveInputsTo(op, ctx, place);
    } else if (DeviceMemoryInUse()) {
      MoveInputsTo(op, ctx, Place{});
    }
  }
  return k;
}

// The kernel's scalar path for this run of `op` (abi.h, RillKernelScalarFn), taken when
// `k` is the kernel this run's key chooses (as KernelKey computes it on an executor placed
// on `place_device`) and every value the op reads and writes allows it. True when the
// kernel computed the op and its outputs were written; false, with nothing changed,
// otherwise: the caller then takes the general path. REQUIRES: k.scalar.
// The function is pure, so it is called before the outputs are checked: a check that
// fails then discards its results. kIns and kOuts are the op's schema's slot counts when
// the block was prepared for them (ScalarRunnerFor), or -1: read from the op. Fixed counts
// unroll the loops of small ops, whose checks are most of what they cost.
template <int kIns, int kOuts>
bool RunScalar(const PreparedOp& op, const KernelInstance& k, Variable* const* frame, int32_t place_device) {
  const int ins = kIns >= 0 ? kIns : op.scalar_ins;
  const int outs = kOuts >= 0 ? kOuts : op.scalar_outs;
  RillScalar in[kIns > 0 ? kIns : kIns == 0 ? 1 : RILL_SCALAR_MAX_SLOTS];
  if constexpr (kIns == 0) in[0] = RillScalar{RILL_NO_SCALAR, 0};  // an op of no input: never read
  RillScalar out[kOuts > 0 ? kOuts : RILL_SCALAR_MAX_SLOTS];
  bool any_input = false;
  for (int i = 0; i < ins; ++i) {
    const uint32_t id = op.scalar_in[i];
    if (id == RillOpInfo::kNoArg) {
      in[i] = RillScalar{RILL_NO_SCALAR, 0};
      continue;
    }
    const Variable* v = frame[id];
    if (v == nullptr || !v->GetScalar(&in[i].dtype, &in[i].bits)) return false;
    any_input = true;
  }
  // Inputs that are all host scalars keep an op on the CPU on any executor (KernelKey).
  const int32_t device = any_input ? RILL_CPU : place_device;
  int32_t dtype = op.static_dtype;
  if constexpr (kIns != 0) {
    if (op.scalar_dtype_in >= 0) dtype = in[op.scalar_dtype_in].dtype;
  }
  // (A dtype input the op leaves empty reads RILL_NO_SCALAR, no kernel's key.)
  if (k.device != device || k.dtype != dtype || dtype == RILL_NO_SCALAR) return false;
  for (int o = 0; o < outs; ++o) out[o] = RillScalar{RILL_NO_SCALAR, 0};
  if (k.scalar(k.state, in, out) == 0) return false;
  // Where each result goes: in place, or anew into a variable that takes a scalar. An
  // output that is also an input keeps that input's dtype, or the op goes to compute
  // (abi.h): a tensor path refuses to retype a variable it has yet to read.
  Tensor* in_place[kOuts > 0 ? kOuts : RILL_SCALAR_MAX_SLOTS];
  for (int o = 0; o < outs; ++o) {
    in_place[o] = nullptr;
    const uint32_t id = op.scalar_out[o];
    if (id == RillOpInfo::kNoArg || out[o].dtype == RILL_NO_SCALAR) continue;
    const int alias = op.scalar_out_alias[o];
    if (alias >= 0 && out[o].dtype != in[alias].dtype) return false;
    Variable* v = frame[id];
    if (v == nullptr) return false;
    in_place[o] = v->ScalarInPlace(out[o].dtype);
    if (in_place[o] == nullptr && !v->TakesScalar()) return false;
  }
  for (int o = 0; o < outs; ++o) {
    if (in_place[o] != nullptr) {
      in_place[o]->set_scalar_bits(out[o].bits);
    } else if (op.scalar_out[o] != RillOpInfo::kNoArg && out[o].dtype != RILL_NO_SCALAR) {
      frame[op.scalar_out[o]]->SetScalar(out[o].dtype, out[o].bits);
    }
  }
  return true;
}

// RunScalar for an op of `ins` input and `outs` output slots: unrolled for the shapes of
// small ops (a fill, a counter, a compare or an arithmetic op).
ScalarRunner ScalarRunnerFor(size_t ins, size_t outs) {
  if (outs == 1) {
    if (ins == 0) return &RunScalar<0, 1>;
    if (ins == 1) return &RunScalar<1, 1>;
    if (ins == 2) return &RunScalar<2, 1>;
  }
  return &RunScalar<-1, -1>;
}

// Fills `op`'s scalar layout (PreparedOp::scalar_in) from its schema and arguments.
void LayOutScalarSlots(PreparedOp& op) {
  const OpSchemaEntry& schema = *op.info.schema;
  if (schema.inputs.size() > RILL_SCALAR_MAX_SLOTS || schema.outputs.size() > RILL_SCALAR_MAX_SLOTS) return;
  // False when a slot holds more than one variable.
  const auto lay = [](const std::vector<SlotSpec>& specs, const std::vector<RillOpInfo::Args>& args, uint32_t* ids) {
    for (size_t i = 0; i < specs.size(); ++i) {
      ids[i] = RillOpInfo::kNoArg;
      for (const RillOpInfo::Args& a : args) {
        if (a.slot != specs[i].name || a.ids.empty()) continue;
        if (a.ids.size() > 1 || ids[i] != RillOpInfo::kNoArg) return false;
        ids[i] = a.ids[0];
      }
    }
    return true;
  };
  if (!lay(schema.inputs, op.info.inputs, op.scalar_in) || !lay(schema.outputs, op.info.outputs, op.scalar_out)) return;
  op.scalar_ins = static_cast<uint8_t>(schema.inputs.size());
  op.scalar_outs = static_cast<uint8_t>(schema.outputs.size());
  for (size_t i = 0; i < schema.inputs.size(); ++i) {
    if (schema.inputs[i].name == schema.dtype_source) op.scalar_dtype_in = static_cast<int8_t>(i);
  }
  for (size_t o = 0; o < schema.outputs.size(); ++o) {
    op.scalar_out_alias[o] = -1;
    for (size_t i = 0; i < schema.inputs.size(); ++i) {
      if (op.scalar_out[o] != RillOpInfo::kNoArg && op.scalar_out[o] == op.scalar_in[i]) {
        op.scalar_out_alias[o] = static_cast<int8_t>(i);
      }
    }
  }
  op.run_scalar = ScalarRunnerFor(schema.inputs.size(), schema.outputs.size());
}

}  // namespace

Executor::Executor(const Registry& registry, std::shared_ptr<const Program> program)
    : registry_(registry), program_(std::move(program)), prepared_(program_->blocks_size()) {}

Executor::Executor(const Registry& registry, const std::shared_ptr<const proto::ProgramDesc>& program)
    : Executor(registry, Program::FromProto(*program)) {}

void Executor::set_place(Place place) {
  if (place.device_type != RILL_CPU) {
    const Device* device = FindDevice(place.device_type);
    if (device == nullptr) {
      throw Error("cannot run on " + place.ToString() + ": no loaded plugin provides that device", RILL_UNAVAILABLE);
    }
    const int32_t count = device->device_count();
    if (place.device_id < 0 || place.device_id >= count) {
      throw Error("cannot run on " + place.ToString() + ": " + std::to_string(count) + " " + device->name +
                      " device(s) present (plugin '" + device->plugin + "')",
                  RILL_UNAVAILABLE);
    }
  }
  place_ = place;
}

Executor::~Executor() {
  for (auto& p : prepared_) delete p.load();
}

void Executor::CheckBlock(int32_t block_idx) const {
  if (block_idx < 0 || block_idx >= static_cast<int32_t>(prepared_.size())) {
    throw Error("block " + std::to_string(block_idx) + " does not exist (program has " +
                    std::to_string(prepared_.size()) + " blocks)",
                RILL_OUT_OF_RANGE);
  }
}

Executor::PreparedBlock& Executor::PrepareFirst(int32_t block_idx) {
  CheckBlock(block_idx);
  std::lock_guard lock(prepare_mu_);
  if (PreparedBlock* p = prepared_[block_idx].load(std::memory_order_acquire)) return *p;

  const Program& program = *program_;
  const ProgramBlock& desc = program.block(block_idx);
  auto block = std::make_unique<PreparedBlock>();
  block->idx = block_idx;
  for (const ProgramVar& v : program.vars(desc)) {
    block->declared.emplace_back(std::string(program.str(v.name)), v.persistable);
    block->declares_locals |= !v.persistable;
  }

  std::unordered_map<StrId, uint32_t> ids;
  const auto intern = [&](StrId id, bool output) {
    auto [it, fresh] = ids.emplace(id, static_cast<uint32_t>(block->names.size()));
    if (fresh) {
      const std::string_view name = program.str(id);
      block->names.emplace_back(name);
      block->name_bits.push_back(Scope::NameBits(name));
      block->is_output.push_back(0);
    }
    if (output) block->is_output[it->second] = 1;
    return it->second;
  };
  const auto args = [&](Range<ProgramSlot> slots, bool output) {
    std::vector<RillOpInfo::Args> out;
    for (const ProgramSlot& v : slots) {
      RillOpInfo::Args a;
      a.slot = program.str(v.parameter);
      for (StrId n : program.arguments(v)) a.ids.push_back(intern(n, output));
      out.push_back(std::move(a));
    }
    return out;
  };

  const auto ops = program.ops(desc);
  for (size_t i = 0; i < ops.size(); ++i) {
    const ProgramOp& od = ops[i];
    auto op = std::make_unique<PreparedOp>();
    OpInstance& info = op->info;
    info.type = std::string(program.str(od.type));
    info.block_idx = block_idx;
    info.op_idx = static_cast<int>(i);
    info.executor = this;
    info.names = &block->names;
    info.schema = registry_.FindOp(info.type);
    if (info.schema == nullptr) {
      throw Error("block " + std::to_string(block_idx) + ", op " + std::to_string(i) + ": " +
                      registry_.UnknownOpMessage(info.type),
                  RILL_NOT_FOUND);
    }
    info.inputs = args(program.inputs(od), false);
    info.outputs = args(program.outputs(od), true);
    info.IndexSlots();
    for (const AttrSpec& spec : info.schema->attrs) {
      const AttrValue* value = &spec.default_value;
      for (AttrId a : program.attrs(od)) {
        if (program.str(program.attr(a).name) == spec.name) value = &AttrValueOf(a, spec.type);
      }
      info.attrs.push_back(value);
    }
    const std::string& src = info.schema->dtype_source;
    if (src.rfind("attr:", 0) == 0) {
      op->static_dtype = static_cast<int32_t>(info.FindAttr(src.substr(5).c_str())->i);
    } else if (!src.empty()) {
      for (size_t k = 0; k < info.inputs.size(); ++k) {
        if (info.inputs[k].slot == src && !info.inputs[k].ids.empty()) {
          op->dtype_input = static_cast<int>(k);
          op->dtype_var = info.inputs[k].ids[0];
        }
      }
    }
    LayOutScalarSlots(*op);
    block->infos.push_back(&op->info);
    block->ops.push_back(std::move(op));
  }
  PreparedBlock* raw = block.release();
  prepared_[block_idx].store(raw, std::memory_order_release);
  return *raw;
}

const AttrValue& Executor::AttrValueOf(AttrId attr, int32_t declared) {
  std::unique_ptr<AttrValue>& value = attr_values_[uint64_t{attr} << 32 | static_cast<uint32_t>(declared)];
  if (value == nullptr) value = std::make_unique<AttrValue>(AttrFromProgram(*program_, program_->attr(attr), declared));
  return *value;
}

const std::vector<const RillOpInfo*>& Executor::BlockOps(int32_t block_idx) { return Prepare(block_idx).infos; }

void Executor::Run(int32_t block_idx, const std::shared_ptr<Scope>& scope) {
  PreparedBlock& block = Prepare(block_idx);
  OpBoundaries boundaries;
  LocalFrame frame(block.names.size());
  Resolve(block, scope, frame.data());
  RunOps(block, scope, frame.data(), boundaries);
}

void Executor::RunLoop(int32_t block_idx, const std::shared_ptr<Scope>& parent, bool (*proceed)(void*), void* arg) {
  PreparedBlock& block = Prepare(block_idx);
  OpBoundaries boundaries;
  LocalFrame frame(block.names.size());
  InlineArray<uint8_t> local(block.names.size());  // frame[i] lives in the step scope itself
  std::shared_ptr<Scope> step;
  bool resolved = false;
  uint64_t resolved_at = 0;      // step's ChainVersion when `frame` was resolved
  uint64_t parent_resolved = 0;  // and the parent's
  for (bool go_on = proceed(arg); go_on; go_on = proceed(arg)) {
    const uint64_t above = parent->ChainVersion();  // step->ChainVersion() is this plus its own
    if (!Scope::Reusable(step, above) && !Scope::Shareable(step, above)) {
      // The first step, or the last step's scope is held by go blocks that see its
      // variables, or its parent chain gained a variable since: a scope of its own.
      std::shared_ptr<Scope> next = parent->NewChild();
      if (resolved && above == parent_resolved) {
        // An empty scope under an unchanged chain: only the step's own names move.
        ResolveLocals(block, next, frame.data(), local.data());
        resolved_at = next->version() + above;
      } else {
        resolved = false;
      }
      step = std::move(next);
    }
    if (!resolved || resolved_at != step->version() + above) {
      Resolve(block, step, frame.data(), local.data());
      parent_resolved = parent->ChainVersion();  // Resolve may have made a persistable one above
      resolved_at = step->version() + parent_resolved;
      resolved = true;
    }
    RunOps(block, step, frame.data(), boundaries);
  }
}

void Executor::RunSubBlock(int32_t block_idx, const std::shared_ptr<Scope>& parent) {
  PreparedBlock& block = Prepare(block_idx);
  if (!block.declares_locals && !block.makes_locals.load(std::memory_order_relaxed)) {
    // Its names are looked up on every run: a branch's block uses a few.
    OpBoundaries boundaries;
    LocalFrame frame(block.names.size());
    if (ResolveAbove(block, *parent, frame.data())) {
      RunOps(block, parent, frame.data(), boundaries, /*deferred=*/true);
      return;
    }
    block.makes_locals.store(true, std::memory_order_relaxed);
  }
  Run(block_idx, parent->NewChild());
}

bool Executor::ResolveAbove(const PreparedBlock& block, const Scope& scope, Variable** frame) {
  for (const auto& [name, persistable] : block.declared) {
    if (scope.FindVar(name) == nullptr) return false;  // Resolve would make it in the root
  }
  for (size_t i = 0; i < block.names.size(); ++i) {
    if ((frame[i] = scope.FindVar(block.names[i], block.name_bits[i])) == nullptr) return false;
  }
  return true;
}

void Executor::Resolve(const PreparedBlock& block, const std::shared_ptr<Scope>& scope, Variable** frame,
                       uint8_t* local) {
  for (const auto& [name, persistable] : block.declared) {
    if (!persistable) {
      scope->Var(name);
    } else if (scope->FindVar(name) == nullptr) {
      scope->root()->Var(name);
    }
  }
  for (size_t i = 0; i < block.names.size(); ++i) {
    const bool here = ResolveName(block, *scope, i, frame);
    if (local != nullptr) local[i] = here;
  }
}

void Executor::ResolveLocals(const PreparedBlock& block, const std::shared_ptr<Scope>& scope, Variable** frame,
                             uint8_t* local) {
  for (const auto& [name, persistable] : block.declared) {
    if (!persistable) scope->Var(name);  // persistable ones live up the chain, which is unchanged
  }
  for (size_t i = 0; i < block.names.size(); ++i) {
    if (local[i]) local[i] = ResolveName(block, *scope, i, frame);
  }
}

bool Executor::ResolveName(const PreparedBlock& block, Scope& scope, size_t i, Variable** frame) {
  const std::string& name = block.names[i];
  const uint64_t bits = block.name_bits[i];
  const uint64_t seen = scope.version();
  Variable* v = scope.FindLocalVar(name, bits);
  bool here = v != nullptr;
  if (v == nullptr && scope.parent() != nullptr) v = scope.parent()->FindVar(name, bits);
  if (v == nullptr && block.is_output[i]) {
    v = scope.VarAfterMiss(name, bits, seen);
    here = true;
  }
  frame[i] = v;
  return here;
}

namespace {

// An op's span in the profile, recorded when this goes out of scope (the op ran, took
// the scalar path, or failed).
struct ProfiledOp {
  const RillOpInfo& info;
  Variable* const* frame;
  int64_t start = Profiler::NowNs();
  ~ProfiledOp() {
    try {
      Profiler::RecordOp(info, frame, start);
    } catch (...) {  // out of memory for the trace: the span is lost, the run goes on
    }
  }
};
struct UnprofiledOp {
  UnprofiledOp(const RillOpInfo&, Variable* const*) {}
};

}  // namespace

void Executor::RunOps(const PreparedBlock& block, const std::shared_ptr<Scope>& scope, Variable** frame,
                      OpBoundaries& boundaries, bool deferred) {
  // Read once per block run, so that the ops' loop carries no check when nobody profiles.
  if (Profiler::Active()) {
    RunOpsAs<true>(block, scope, frame, boundaries, deferred);
  } else {
    RunOpsAs<false>(block, scope, frame, boundaries, deferred);
  }
}

template <bool kProfile>
void Executor::RunOpsAs(const PreparedBlock& block, const std::shared_ptr<Scope>& scope, Variable** frame,
                        OpBoundaries& boundaries, bool deferred) {
  RillScope scope_handle = RillScope::Borrowed(scope.get());
  std::shared_ptr<Scope> own_scope;  // the block's own, when deferred and made
  const bool on_cpu = place_.device_type == RILL_CPU;
  // One context for the run, pointed at each op in turn: kernels change nothing in it but
  // the frame's entries, which are the run's anyway.
  RillKernelContext ctx{nullptr,       frame, &block.names,    block.name_bits.data(),
                        &scope_handle, this,  /*device_id=*/0, deferred ? &own_scope : nullptr};
  for (const auto& prepared : block.ops) {
    PreparedOp* op = prepared.get();
    ctx.op = &op->info;
    [[maybe_unused]] const std::conditional_t<kProfile, ProfiledOp, UnprofiledOp> span{op->info, frame};
    // The kernel the op's last run chose.
    KernelInstance* k = op->last.load(std::memory_order_acquire);
    try {
      boundaries.Check();
      if (k != nullptr && k->scalar != nullptr && op->run_scalar != nullptr &&
          op->run_scalar(*op, *k, frame, place_.device_type)) {
        continue;
      }
      // The usual op on a CPU executor: that kernel, whose key cannot have changed, and no
      // device memory to move its inputs from. Otherwise the key chooses again.
      ctx.device_id = 0;
      if (k == nullptr || !k->cpu_static || !on_cpu || DeviceMemoryInUse()) {
        KernelInstance* const last = k;
        k = KernelFor(registry_, *op, k, ctx, place_);
        if (k != last && k->scalar != nullptr && op->run_scalar != nullptr &&
            op->run_scalar(*op, *k, frame, place_.device_type)) {
          continue;
        }
      }
    } catch (const Error& e) {
      RethrowNamingOp(*op, e, boundaries.depth());
    }
    if (RillStatus* st = k->entry->compute(k->state, &ctx)) ThrowKernelFailed(*op, st, boundaries.depth());
  }
}

}  // namespace rill::core
