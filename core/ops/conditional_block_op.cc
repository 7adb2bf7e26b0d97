// Fluid's `conditional_block`: runs sub_block once, in a child scope, when its condition
// holds. The condition comes from `Cond` (Fluid 1.x) or `X` (Fluid 0.x, as in the select
// design). With is_scalar_condition it is one bool element; otherwise the block runs when
// every condition tensor is non-empty (Fluid's rule).
//
// Its gradient, conditional_block_grad, reads the same condition: when it held, it runs its
// own sub_block (which the backward pass writes: the forward block's ops again, recomputing
// what the forward run's child scope held, then their gradient ops, ending in the Params'
// gradients); when it did not, the Params' gradients are zeros. X, Fluid 0.x's condition
// slot, may hold tensors the block reads (the condition being that they are not empty):
// they get gradients too.
#include "core/ops/builtin_ops.h"

namespace rill::core {
namespace {

// Reads the op's slots and attributes once per op instance: a select runs one of these
// per case, every time.
class ConditionalBlock {
 public:
  explicit ConditionalBlock(const rill::OpInfo& op)
      : slot_(ConditionSlot(op)),
        count_(op.InputCount(slot_)),
        scalar_(op.Attr<bool>("is_scalar_condition")),
        block_(op.BlockAttr("sub_block")),
        grad_(op.type() == "conditional_block_grad") {}

  void Compute(rill::KernelContext& ctx) {
    if (ConditionHolds(ctx)) {
      ctx.RunSubBlock(block_);
    } else if (grad_) {
      ZeroGradients(ctx);
    }
  }

 private:
  // conditional_block_grad when no branch ran, so nothing flowed back through it: zeros
  // like each input. A frame of its own: Compute's is on the stack under every block nested
  // in it, so it stays small.
  [[gnu::noinline]] static void ZeroGradients(rill::KernelContext& ctx) {
    for (const char* slot : {"Params", "Input", "X"}) {
      const std::string grad = std::string(slot) + "@GRAD";
      for (size_t i = 0; i < ctx.op().OutputCount(grad); ++i) {
        if (ctx.op().OutputName(grad, i) == RILL_EMPTY_VAR_NAME) continue;
        ZerosLike(ctx.Output(grad, i), ctx.Input(slot, i));
      }
    }
  }

  static const char* ConditionSlot(const rill::OpInfo& op) {
    const bool has_cond = op.InputCount("Cond") > 0;
    const bool has_x = op.InputCount("X") > 0;
    if (has_cond && has_x) throw rill::Error("give the condition in Cond or in X, not both");
    if (!has_cond && !has_x) throw rill::Error("no condition: set input Cond (or X)");
    return has_cond ? "Cond" : "X";
  }

  bool ConditionHolds(rill::KernelContext& ctx) const {
    if (scalar_) return ReadCondition(ctx.Input(slot_), slot_);
    for (size_t i = 0; i < count_; ++i) {
      if (ctx.Input(slot_, i).numel() == 0) return false;
    }
    return true;
  }

  const char* const slot_;
  const size_t count_;
  const bool scalar_;
  const int32_t block_;
  const bool grad_;
};

}  // namespace

void RegisterConditionalBlock(rill::Registrar& r) {
  constexpr uint32_t kOptList = RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE;
  const rill::OpSchema forward =
      rill::OpSchema("conditional_block")
          .Doc(
              "Runs sub_block once in a child scope when the condition holds. The condition "
              "is input Cond (or X, Fluid's older name).")
          .Input("Cond", "condition tensor(s)", kOptList)
          .Input("X", "condition tensor(s), Fluid's older slot name", kOptList)
          .Input("Params", "variables the block reads", kOptList)
          .Input("Input", "variables the block reads (Fluid 1.x name)", kOptList)
          .Output("Out", "variables the block writes", kOptList)
          .Output("Scope", "Fluid's scope holder (unused)", RILL_SLOT_OPTIONAL)
          .RequiredAttr("sub_block", RILL_ATTR_BLOCK, "the block to run")
          .Attr("is_scalar_condition", false,
                "true: the condition is one bool element; false: run when every condition "
                "tensor is non-empty")
          .Grad("conditional_block_grad", "Cond,X,Params,Input,Out,Out@GRAD", "Params,Input,X");
  r.Op(forward);
  // The backward pass writes this op itself (core/program/backward.cc): its sub_block is the
  // gradient block, not the forward one.
  r.Op(forward.MakeGradSchema().Doc(
      "Gradient of conditional_block: when the condition held, runs sub_block (the forward ops again, then "
      "their gradients, ending in Params@GRAD); else Params@GRAD are zeros."));
  r.StatefulKernel<ConditionalBlock>("conditional_block", RILL_CPU, RILL_ANY_DTYPE);
  r.StatefulKernel<ConditionalBlock>("conditional_block_grad", RILL_CPU, RILL_ANY_DTYPE);
}

}  // namespace rill::core
