// go: runs sub_block as a new task (a go block), concurrently with the rest of the program.
//
// The block runs in a new child scope of the go op's scope, so it sees every enclosing
// scope's variables, and the task keeps those scopes alive until it ends (no "must be in
// the global scope" rule). Variables named in X that hold channels are bound into the
// child scope when the go op runs, the way Go evaluates `go f(ch)`'s arguments at the go
// statement: reassigning the outer variable later (a daisy chain's `left = right`) does not
// change the channel the block uses. Everything else is shared by reference.
//
// The child is always a new, empty scope (ctx_go makes it), not one that takes over what
// this op's last block left behind (ctx_new_child_scope): a go op's blocks mostly live at
// once (a spawn loop's, a daisy chain's), so there is rarely anything to take over, and
// offering and taking it locks the parent scope at every block's start and end, a cache
// line that two workers then pass back and forth (see docs/PERFORMANCE.md, stop 33).
#include "channel.h"
#include "ops.h"

namespace rill::csp {
namespace {

class Go {
 public:
  explicit Go(const OpInfo& op) : block_(op.BlockAttr("sub_block")), x_(op.InputSlot("X")) {
    for (size_t i = 0, n = op.InputCount("X"); i < n; ++i) x_index_.push_back(op.InputIndex(x_, i));
  }
  void Compute(KernelContext& ctx) {
    // The frame indices of the channels among X. On the stack: one kernel instance serves
    // every task running this op's block at once.
    constexpr size_t kInline = 16;
    uint32_t inline_bound[kInline];
    std::vector<uint32_t> more(x_index_.size() > kInline ? x_index_.size() : 0);
    uint32_t* bound = more.empty() ? inline_bound : more.data();
    size_t n = 0;
    for (size_t i = 0; i < x_index_.size(); ++i) {
      // As the executor resolved X; one made since the run started is looked up (and
      // entered in the frame, which ctx.Go reads).
      RillVariable* v = ctx.FrameVar(x_index_[i]);
      const Variable var = v != nullptr ? Variable(v) : ctx.InputVarOrNull(x_, i);
      if (var && ChannelIn(var) != nullptr) bound[n++] = x_index_[i];  // others: shared
    }
    ctx.Go(block_, bound, n);
  }

 private:
  const int32_t block_;
  const Slot x_;
  std::vector<uint32_t> x_index_;  // frame index of each X
};

}  // namespace

void RegisterGo(Registrar& r) {
  r.Op(OpSchema("go")
           .Doc("Starts sub_block as a new task in a child scope of this op's scope and returns at "
                "once. Channels named in X are bound when the go op runs; other variables are "
                "shared. The task keeps its scopes alive; when the main block ends, go blocks "
                "still running are stopped.")
           .Input("X", "variables the block uses from enclosing scopes", RILL_SLOT_OPTIONAL | RILL_SLOT_DUPLICABLE)
           .RequiredAttr("sub_block", RILL_ATTR_BLOCK, "the block to run as a task"));
  r.StatefulKernel<Go>("go", RILL_CPU, RILL_ANY_DTYPE);
}

}  // namespace rill::csp
