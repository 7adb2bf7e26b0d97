// Fluid's `recurrent` (the op StaticRNN builds), its gradient, and `rnn_memory_helper`.
//
// `recurrent` steps over the first dimension of its `inputs` (each [T, ...], the same T):
// step i runs sub_block once in a new child scope of the op's scope, at time t = i (or
// T-1-i with `reverse`). Before the step, that scope holds each input's slice t (under the
// input's own name, its first dimension dropped) and, with has_states, each ex_states[k]:
// initial_states[k] at the first step, else states[k] as the step before left it. After it,
// each output's value in the step's scope is written to entry t of the output of that name
// outside, [T, ...]. `parameters` are what the block reads from outside; it reads them in
// place. With is_train (the default, as in Fluid) the steps' scopes are kept in step_scopes,
// in the order they ran, for recurrent_grad; otherwise a step's scope lives until the next
// step has read its states.
//
// `recurrent_grad` runs its sub_block, the step block's gradient ops, once per kept step,
// last first, each in a new child of that step's scope, so a gradient op reads the forward
// values of its own step. Before the block runs, that child holds, under the names Fluid's
// backward pass gives them ("v@GRAD"), the slice t of each output's gradient and each
// state's gradient, which is the gradient of the matching ex-state from the step run after
// it (zeros for the step run last, or where none reached that ex-state; added to the
// output's gradient where a state is an output too).
// After it: each input's "x@GRAD" goes to entry t of inputs@GRAD, each parameter's "p@GRAD"
// is added into parameters@GRAD, and at the first step each ex-state's gradient is
// initial_states@GRAD. A gradient the block does not compute is zeros.
//
// `rnn_memory_helper` copies X to Out (StaticRNN puts one after each state and step output,
// so a step's state and output are variables of their own); its gradient passes Out's
// gradient back, or zeros where none reached it.
#include <cstring>
#include <vector>

#include "core/ops/builtin_ops.h"

namespace rill::core {
namespace {

constexpr const char* kGradSuffix = RILL_GRAD_SUFFIX;

std::string GradName(const std::string& name) { return name + kGradSuffix; }

size_t ByteSize(const rill::Tensor& t) { return static_cast<size_t>(t.numel()) * rill::DataTypeSize(t.dtype()); }

// `t` as the op may read it: a value on the host. `what` names it in the error.
const rill::Tensor& OnHost(const rill::Tensor& t, const std::string& what) {
  if (!t.initialized()) throw rill::Error(what + " holds no value");
  if (t.device_type() != RILL_CPU) throw rill::Error(what + " is on a device; recurrent runs on the host");
  return t;
}

std::string ShapeOf(const std::vector<int64_t>& dims) { return rill::ShapeString(dims.data(), dims.size()); }

// The bytes of entry t of `whole` ([T, ...]).
size_t EntryBytes(const rill::Tensor& whole) {
  return whole.dims_data()[0] == 0 ? 0 : ByteSize(whole) / static_cast<size_t>(whole.dims_data()[0]);
}

// `part` = entry t of `whole`, its first dimension dropped.
void ReadEntry(rill::Tensor whole, int64_t t, rill::Tensor part) {
  const std::vector<int64_t> dims(whole.dims_data() + 1, whole.dims_data() + whole.ndim());
  void* to = part.Allocate(whole.dtype(), dims);
  const size_t bytes = EntryBytes(whole);
  if (bytes > 0) std::memcpy(to, static_cast<const char*>(whole.raw_data()) + t * bytes, bytes);
}

// Entry t of `whole` = `part`; `whole` must be [T] + part's dims of part's dtype.
void WriteEntry(rill::Tensor part, int64_t t, rill::Tensor& whole, const std::string& what) {
  const std::vector<int64_t> entry(whole.dims_data() + 1, whole.dims_data() + whole.ndim());
  if (part.dtype() != whole.dtype() || part.dims() != entry) {
    throw rill::Error(what + " is " + rill::DataTypeName(part.dtype()) + " " + ShapeOf(part.dims()) + " at time " +
                      std::to_string(t) + ", but " + rill::DataTypeName(whole.dtype()) + " " + ShapeOf(entry) +
                      " at the others");
  }
  const size_t bytes = EntryBytes(whole);
  if (bytes > 0) std::memcpy(static_cast<char*>(whole.raw_data()) + t * bytes, part.raw_data(), bytes);
}

// acc += add, both of one dtype and size.
void AddInto(rill::Tensor& acc, const rill::Tensor& add, const std::string& what) {
  if (add.dtype() != acc.dtype() || add.numel() != acc.numel()) {
    throw rill::Error(what + " is " + rill::DataTypeName(add.dtype()) + " " + ShapeOf(add.dims()) + ", but " +
                      rill::DataTypeName(acc.dtype()) + " " + ShapeOf(acc.dims()) + " at another step");
  }
  rill::VisitDataType<float, double, int32_t, int64_t>(acc.dtype(), what.c_str(), [&](auto zero) {
    using T = decltype(zero);
    T* a = acc.mutable_data<T>();
    const T* b = add.data<T>();
    for (int64_t i = 0; i < acc.numel(); ++i) a[i] += b[i];
  });
}

// The value `name` has in `scope` itself (not an ancestor's), or a null view.
rill::Variable LocalValue(const rill::Scope& scope, const std::string& name) {
  rill::Variable v = scope.Var(name);
  return v.initialized() ? v : rill::Variable(nullptr);
}

// The slots and attributes both directions read.
struct Recurrence {
  // `grad`: for recurrent_grad, which reads the forward outputs as inputs.
  Recurrence(rill::KernelContext& ctx, bool grad)
      : op(ctx.op()),
        inputs(op.InputNames("inputs")),
        outputs(grad ? op.InputNames("outputs") : op.OutputNames("outputs")),
        ex_states(op.Attr<std::vector<std::string>>("ex_states")),
        states(op.Attr<std::vector<std::string>>("states")),
        has_states(op.Attr<bool>("has_states") || !ex_states.empty()),
        reverse(op.Attr<bool>("reverse")),
        block(op.BlockAttr("sub_block")) {
    if (inputs.empty()) throw rill::Error("recurrent needs at least one input in 'inputs': the sequence it steps over");
    if (ex_states.size() != states.size()) {
      throw rill::Error("ex_states names " + std::to_string(ex_states.size()) + " variables, states " +
                        std::to_string(states.size()) + ": they pair up, a state with its value at the step before");
    }
    if (has_states && op.InputCount("initial_states") != states.size()) {
      throw rill::Error("initial_states has " + std::to_string(op.InputCount("initial_states")) +
                        " variables, states " + std::to_string(states.size()));
    }
    steps = -1;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const rill::Tensor x = OnHost(ctx.Input("inputs", k), "input '" + inputs[k] + "'");
      if (x.ndim() < 1) throw rill::Error("input '" + inputs[k] + "' is a scalar; recurrent steps over dimension 0");
      if (steps >= 0 && x.dims_data()[0] != steps) {
        throw rill::Error("input '" + inputs[k] + "' has " + std::to_string(x.dims_data()[0]) + " steps, input '" +
                          inputs[0] + "' " + std::to_string(steps));
      }
      steps = x.dims_data()[0];
    }
    if (steps == 0) throw rill::Error("input '" + inputs[0] + "' has no steps (its first dimension is 0)");
  }
  // The time step i-th run is at.
  int64_t TimeOf(int64_t i) const { return reverse ? steps - 1 - i : i; }

  const rill::OpInfo op;
  const std::vector<std::string> inputs, outputs, ex_states, states;
  const bool has_states, reverse;
  const int32_t block;
  int64_t steps;
};

void Recurrent(rill::KernelContext& ctx) {
  const Recurrence r(ctx, /*grad=*/false);
  const rill::Scope scope = ctx.scope();
  StepScopeList* kept = nullptr;
  if (r.op.Attr<bool>("is_train") && r.op.OutputCount("step_scopes") > 0) {
    kept = new StepScopeList;
    ctx.OutputVar("step_scopes").SetCustom(StepScopesType(), kept);  // frees the last run's steps
  }
  std::vector<rill::Scope> last;        // without `kept`: the step before, whose states the next reads
  const rill::Scope* before = nullptr;  // the step before's scope, in `kept` or `last`
  for (int64_t i = 0; i < r.steps; ++i) {
    const int64_t t = r.TimeOf(i);
    rill::Scope step = scope.NewChild();
    for (size_t k = 0; k < r.inputs.size(); ++k) ReadEntry(ctx.Input("inputs", k), t, step.Var(r.inputs[k]).tensor());
    for (size_t k = 0; r.has_states && k < r.states.size(); ++k) {
      const rill::Variable from = i == 0 ? ctx.InputVar("initial_states", k) : LocalValue(*before, r.states[k]);
      if (!from) {
        throw rill::Error("the step block did not compute state '" + r.states[k] + "' at time " +
                          std::to_string(r.TimeOf(i - 1)));
      }
      const rill::Tensor value =
          OnHost(from.tensor(), i == 0 ? "initial state '" + r.op.InputName("initial_states", k) + "'"
                                       : "state '" + r.states[k] + "'");
      rill::Tensor ex = step.Var(r.ex_states[k]).tensor();
      ex.ShareWith(value);
      if (const auto lod = value.lod(); !lod.empty()) ex.set_lod(lod);
    }
    ctx.RunBlock(r.block, step);
    for (size_t j = 0; j < r.outputs.size(); ++j) {
      const rill::Variable v = LocalValue(step, r.outputs[j]);
      if (!v) {
        throw rill::Error("the step block did not compute output '" + r.outputs[j] + "' at time " + std::to_string(t));
      }
      const rill::Tensor part = OnHost(v.tensor(), "output '" + r.outputs[j] + "'");
      rill::Tensor whole = ctx.Output("outputs", j);
      if (i == 0) {
        std::vector<int64_t> dims = part.dims();
        dims.insert(dims.begin(), r.steps);
        whole.Allocate(part.dtype(), dims);
      }
      WriteEntry(part, t, whole, "output '" + r.outputs[j] + "'");
    }
    if (kept != nullptr) {
      kept->scopes.push_back(std::move(step));
      before = &kept->scopes.back();
    } else {
      last.clear();
      last.push_back(std::move(step));
      before = &last.back();
    }
  }
}

// The gradient output `slot`[k], or a null view where none is asked for.
rill::Variable GradOutput(rill::KernelContext& ctx, const char* slot, size_t k) {
  if (k >= ctx.op().OutputCount(slot) || ctx.op().OutputName(slot, k) == RILL_EMPTY_VAR_NAME) {
    return rill::Variable(nullptr);
  }
  return ctx.OutputVar(slot, k);
}

void RecurrentGrad(rill::KernelContext& ctx) {
  const Recurrence r(ctx, /*grad=*/true);
  auto* kept = ctx.InputVar("step_scopes").Custom<StepScopeList>(StepScopesType());
  if (kept == nullptr || static_cast<int64_t>(kept->scopes.size()) != r.steps) {
    throw rill::Error("step_scopes ('" + r.op.InputName("step_scopes") + "') holds " +
                      (kept == nullptr ? std::string("no steps") : std::to_string(kept->scopes.size()) + " steps") +
                      " for " + std::to_string(r.steps) +
                      " time steps: run the forward recurrent in this scope first, with is_train");
  }
  // Every gradient asked for starts as zeros, so a step that adds nothing leaves zeros.
  const auto start = [&](const char* slot, const char* grad_slot) {
    for (size_t k = 0; k < r.op.InputCount(slot); ++k) {
      if (rill::Variable g = GradOutput(ctx, grad_slot, k)) {
        const rill::Tensor like = OnHost(ctx.Input(slot, k), std::string(slot) + " '" + r.op.InputName(slot, k) + "'");
        ZerosLike(g.tensor(), like);
      }
    }
  };
  start("inputs", "inputs@GRAD");
  start("parameters", "parameters@GRAD");
  start("initial_states", "initial_states@GRAD");

  std::vector<rill::Scope> later;  // the gradient scope of the step run after this one
  for (int64_t i = r.steps - 1; i >= 0; --i) {
    const int64_t t = r.TimeOf(i);
    rill::Scope g = kept->scopes[static_cast<size_t>(i)].NewChild();
    for (size_t j = 0; j < r.op.InputCount("outputs@GRAD"); ++j) {
      if (r.op.InputName("outputs@GRAD", j) == RILL_EMPTY_VAR_NAME || j >= r.outputs.size()) continue;
      const rill::Tensor whole = OnHost(ctx.Input("outputs@GRAD", j), "the gradient of output '" + r.outputs[j] + "'");
      ReadEntry(whole, t, g.Var(GradName(r.outputs[j])).tensor());
    }
    for (size_t k = 0; k < r.states.size(); ++k) {
      const rill::Variable from =
          later.empty() ? rill::Variable(nullptr) : LocalValue(later.back(), GradName(r.ex_states[k]));
      rill::Variable to = g.Var(GradName(r.states[k]));
      if (to.initialized()) {  // the state is an output too
        rill::Tensor sum = to.tensor();
        if (from) AddInto(sum, from.tensor(), "the gradient of state '" + r.states[k] + "'");
      } else if (from) {
        to.tensor().ShareWith(from.tensor());
      } else if (const rill::Variable value = LocalValue(kept->scopes[static_cast<size_t>(i)], r.states[k])) {
        // The last step's states, or ones no gradient reached: nothing flows back into them.
        const rill::Tensor like = value.tensor();
        ZerosLike(to.tensor(), like);
      }
    }
    ctx.RunBlock(r.block, g);
    for (size_t k = 0; k < r.inputs.size(); ++k) {
      rill::Variable out = GradOutput(ctx, "inputs@GRAD", k);
      const rill::Variable in = out ? LocalValue(g, GradName(r.inputs[k])) : rill::Variable(nullptr);
      if (!in) continue;
      rill::Tensor whole = out.tensor();
      WriteEntry(OnHost(in.tensor(), "the gradient of input '" + r.inputs[k] + "'"), t, whole,
                 "the gradient of input '" + r.inputs[k] + "'");
    }
    for (size_t k = 0; k < r.op.InputCount("parameters"); ++k) {
      rill::Variable out = GradOutput(ctx, "parameters@GRAD", k);
      const std::string name = r.op.InputName("parameters", k);
      const rill::Variable in = out ? LocalValue(g, GradName(name)) : rill::Variable(nullptr);
      if (!in) continue;
      rill::Tensor acc = out.tensor();
      AddInto(acc, OnHost(in.tensor(), "the gradient of parameter '" + name + "'"),
              "the gradient of parameter '" + name + "'");
    }
    for (size_t k = 0; i == 0 && k < r.ex_states.size(); ++k) {
      rill::Variable out = GradOutput(ctx, "initial_states@GRAD", k);
      const rill::Variable in = out ? LocalValue(g, GradName(r.ex_states[k])) : rill::Variable(nullptr);
      if (in) out.tensor().ShareWith(OnHost(in.tensor(), "the gradient of ex-state '" + r.ex_states[k] + "'"));
    }
    later.clear();
    later.push_back(std::move(g));
  }
  kept->scopes.clear();  // the forward values are spent
}

void RnnMemoryHelper(rill::KernelContext& ctx) {
  const rill::Tensor x = ctx.Input("X");
  rill::Tensor out = ctx.Output("Out");
  out.ShareWith(x);
  out.set_lod(x.lod());
}

void RnnMemoryHelperGrad(rill::KernelContext& ctx) {
  const rill::Variable dout = ctx.InputVarOrNull("Out@GRAD");
  rill::Tensor dx = ctx.Output("X@GRAD");
  if (dout && dout.initialized()) {
    const rill::Tensor g = dout.tensor();
    dx.ShareWith(g);
    dx.set_lod(g.lod());
    return;
  }
  const rill::Tensor x = ctx.Input("X");
  ZerosLike(dx, x);
}

}  // namespace

void RegisterRecurrent(rill::Registrar& r) {
  const rill::OpSchema forward =
      rill::OpSchema("recurrent")
          .Doc(
              "Fluid's StaticRNN: runs sub_block once per entry of the inputs' first dimension (T steps, last "
              "first with reverse), each step in a new child scope holding the inputs' entries and the states "
              "of the step before (ex_states; initial_states at the first); each output's step value becomes "
              "its entry of outputs, [T, ...]. With is_train the steps' scopes are kept in step_scopes for "
              "recurrent_grad.")
          .Input("inputs", "sequences [T, ...], one entry per step", RILL_SLOT_DUPLICABLE)
          .Input("initial_states", "each state's value before the first step",
                 RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Input("parameters", "what the step block reads from outside", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Output("outputs", "each step output stacked, [T, ...]", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
          .Output("step_scopes", "each step's scope, kept for recurrent_grad with is_train", RILL_SLOT_OPTIONAL)
          .RequiredAttr("sub_block", RILL_ATTR_BLOCK, "the step block")
          .Attr("has_states", false, "whether the block carries states (ex_states, states)")
          .Attr("ex_states", std::vector<std::string>{}, "each state's name in a step, holding the step before's")
          .Attr("states", std::vector<std::string>{}, "each state's name a step computes it under")
          .Attr("reverse", false, "step from the last entry to the first")
          .Attr("is_train", true, "keep every step's scope for the gradient")
          .Attr("skip_eager_deletion_vars", std::vector<std::string>{}, "Fluid's memory optimization hint; unused")
          .Grad("recurrent_grad", "inputs,initial_states,parameters,outputs,outputs@GRAD,step_scopes,step_scopes@GRAD",
                "inputs,initial_states,parameters");
  r.Op(forward);
  // The backward pass writes this op itself (core/program/backward.cc): its sub_block is the
  // step block's gradient block.
  r.Op(forward.MakeGradSchema()
           .Doc("Gradient of recurrent: runs sub_block (the step block's gradient ops) once per kept step, last "
                "first, in a child of that step's scope holding the outputs' and states' gradients of the step; "
                "collects the inputs' entries, adds up the parameters' gradients, and ends with the initial "
                "states'.")
           .KernelDtypeFrom(""));
  r.Kernel("recurrent", RILL_CPU, RILL_ANY_DTYPE, &Recurrent);
  r.Kernel("recurrent_grad", RILL_CPU, RILL_ANY_DTYPE, &RecurrentGrad);

  const rill::OpSchema helper = rill::OpSchema("rnn_memory_helper")
                                    .Doc(
                                        "Out = X, a variable of its own (StaticRNN's states and step outputs); "
                                        "keeps X's LoD.")
                                    .Input("X", "the value")
                                    .Output("Out", "X's copy")
                                    .Attr("dtype", 5, "Fluid's declared dtype; the value's own is used")
                                    .Grad("rnn_memory_helper_grad", "X,Out,Out@GRAD", "X");
  r.Op(helper);
  r.Op(helper.MakeGradSchema()
           .Doc("X@GRAD = Out@GRAD, or zeros like X where no gradient reached Out.")
           .KernelDtypeFrom(""));
  r.Kernel("rnn_memory_helper", RILL_CPU, RILL_ANY_DTYPE, &RnnMemoryHelper);
  r.Kernel("rnn_memory_helper_grad", RILL_CPU, RILL_ANY_DTYPE, &RnnMemoryHelperGrad);
}

}  // namespace rill::core
