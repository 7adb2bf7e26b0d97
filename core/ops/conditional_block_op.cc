// Fluid's `conditional_block`: runs sub_block once, in a child scope, when its condition
// holds. The condition comes from `Cond` (Fluid 1.x) or `X` (Fluid 0.x, as in the select
// design). With is_scalar_condition it is one bool element; otherwise the block runs when
// every condition tensor is non-empty (Fluid's rule).
#include "core/ops/control_flow.h"

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
        block_(op.BlockAttr("sub_block")) {}

  void Compute(rill::KernelContext& ctx) {
    if (ConditionHolds(ctx)) ctx.RunSubBlock(block_);
  }

 private:
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
};

}  // namespace

void RegisterConditionalBlock(rill::Registrar& r) {
  constexpr uint32_t kOptList = RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE;
  r.Op(rill::OpSchema("conditional_block")
           .Doc("Runs sub_block once in a child scope when the condition holds. The condition "
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
                 "tensor is non-empty"));
  r.StatefulKernel<ConditionalBlock>("conditional_block", RILL_CPU, RILL_ANY_DTYPE);
}

}  // namespace rill::core
