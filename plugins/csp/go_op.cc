// go: runs sub_block as a new task (a go block), concurrently with the rest of the program.
//
// The block runs in a new child scope of the go op's scope, so it sees every enclosing
// scope's variables, and the task keeps those scopes alive until it ends (no "must be in
// the global scope" rule). Variables named in X that hold channels are bound into the
// child scope when the go op runs, the way Go evaluates `go f(ch)`'s arguments at the go
// statement: reassigning the outer variable later (a daisy chain's `left = right`) does not
// change the channel the block uses. Everything else is shared by reference.

#include "channel.h"
#include "ops.h"

namespace rill::csp {
namespace {

class Go {
 public:
  explicit Go(const OpInfo& op)
      : block_(op.BlockAttr("sub_block")), x_(op.InputSlot("X")), x_count_(op.InputCount(x_)) {}
  void Compute(KernelContext& ctx) {
    // The channels among X. On the stack: one kernel instance serves every task running
    // this op's block at once.
    constexpr size_t kInline = 16;
    RillArg inline_bound[kInline];
    std::vector<RillArg> more(x_count_ > kInline ? x_count_ : 0);
    RillArg* bound = more.empty() ? inline_bound : more.data();
    size_t n = 0;
    for (size_t i = 0; i < x_count_; ++i) {
      const Variable var = ctx.InputVarOrNull(x_, i);
      if (var && ChannelIn(var) != nullptr) bound[n++] = RillArg{x_.handle(), static_cast<uint32_t>(i)};
    }
    ctx.Go(block_, bound, n);  // others: shared
  }

 private:
  const int32_t block_;
  const Slot x_;
  const size_t x_count_;
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
