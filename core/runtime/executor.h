// core/runtime/executor.h — runs the blocks of one program.
//
// Contract:
//  - An Executor is bound to one validated program. Each block is prepared once, on first
//    use (op instances, attributes with defaults, argument name table), and can then run
//    any number of times, in any scope, from several threads at once.
//  - Run(block, scope) runs the block's ops in order, inline on the calling thread. Before
//    the first op, variables the block declares are created: persistable ones in the root
//    scope (unless some scope up the chain has them), the rest in `scope`; an output not
//    found up the scope chain is created in `scope`.
//  - A kernel is chosen per op by (op type, device, dtype key) on first run and cached;
//    a different dtype key on a later run chooses (and caches) again. The device is the
//    executor's place when the op has a kernel for it there, else the CPU. Input tensors
//    on another device than the kernel's are moved to it (in their variables, so a
//    parameter moves once and stays) before the kernel runs.
//  - A kernel that offers a scalar path (abi.h, RillKernelScalarFn) is called through it,
//    with no kernel context, when every value its op reads and writes is a scalar; any
//    plugin's kernel may offer one. The executor knows no op by name.
//  - Each run resolves the block's names in its scope once, before the first op; a loop
//    (RunLoop) keeps them from step to step while no variable was created on the scope
//    chain since (Scope::ChainVersion).
//  - Run inside a task (core/tasks) stops between ops once the task's run is cancelled.
//  - Any failure throws Error naming block, op index, op type, its variables and the
//    kernel's message; errors from nested blocks keep the whole chain.
#ifndef RILL_CORE_RUNTIME_EXECUTOR_H_
#define RILL_CORE_RUNTIME_EXECUTOR_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/program/program.h"
#include "core/proto/framework.pb.h"
#include "core/registry/registry.h"
#include "core/runtime/op_instance.h"
#include "core/runtime/scope.h"

namespace rill::core {

class OpBoundaries;

class Executor {
 public:
  Executor(const Registry& registry, std::shared_ptr<const Program> program);
  // A program built in memory (tests, tools): read into the compact form first.
  Executor(const Registry& registry, const std::shared_ptr<const proto::ProgramDesc>& program);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void Run(int32_t block_idx, const std::shared_ptr<Scope>& scope);
  // Runs block `block_idx` as a loop body in child scopes of `parent`
  // for as long as `proceed(arg)`, asked before each step, returns true. A step runs in
  // the previous step's scope while nothing else holds that scope and no ancestor gained a
  // variable since (what Fluid's `while` does in `is_test`: one child scope for every
  // step), and its names resolve again only when the chain gained a variable.
  void RunLoop(int32_t block_idx, const std::shared_ptr<Scope>& parent, bool (*proceed)(void*), void* arg);
  // Runs block `block_idx` once as the sub-block of an op running in `parent`
  // (conditional_block, a select's case), as Run in parent->NewChild() would. When the
  // block declares no local variable and every name it uses already exists up `parent`'s
  // chain, it would make nothing in its own scope: its names resolve in `parent`, and the
  // scope is made only if a kernel asks for it or starts a go block (ExposedScope).
  void RunSubBlock(int32_t block_idx, const std::shared_ptr<Scope>& parent);
  // Throws Error(OUT_OF_RANGE) unless the program has block `block_idx`.
  void CheckBlock(int32_t block_idx) const;
  // The ops of block `block_idx`, prepared (on first use) and in order; they live as long
  // as the executor. Throws as Run would for a block that cannot be prepared.
  const std::vector<const RillOpInfo*>& BlockOps(int32_t block_idx);
  // Where kernels run when they can (default: the CPU). Throws if no plugin drives the
  // device or it is not present.
  void set_place(Place place);
  const Place& place() const { return place_; }
  const Program& program() const { return *program_; }
  const Registry& registry() const { return registry_; }

  struct PreparedBlock;

 private:
  // Block `block_idx`, prepared on first use. Inline up to its usual case, a block prepared
  // already: a select's chosen case and a conditional_block run theirs every round.
  PreparedBlock& Prepare(int32_t block_idx) {
    if (static_cast<uint32_t>(block_idx) < prepared_.size()) {
      if (PreparedBlock* p = prepared_[static_cast<size_t>(block_idx)].load(std::memory_order_acquire)) return *p;
    }
    return PrepareFirst(block_idx);
  }
  PreparedBlock& PrepareFirst(int32_t block_idx);
  // The value of a program's attribute, as a schema declaring it `declared` reads it: one
  // copy per distinct attribute (Program keeps each once) and declared type for the
  // executor's life. REQUIRES: prepare_mu_ held.
  const AttrValue& AttrValueOf(AttrId attr, int32_t declared);
  // Creates the block's declared variables and its outputs missing from the chain, and
  // fills `frame` (one entry per name the block uses).
  // With `local`, also records which names resolved in `scope` itself (found or created there).
  void Resolve(const PreparedBlock& block, const std::shared_ptr<Scope>& scope, Variable** frame,
               uint8_t* local = nullptr);
  // Resolve into `scope`, a new empty sibling of the scope `frame` was resolved in, whose
  // parent chain has not changed since: only the names marked `local` can resolve
  // differently, so only they are looked up (RunLoop's next step after a go block kept
  // the last one). Updates `local`.
  void ResolveLocals(const PreparedBlock& block, const std::shared_ptr<Scope>& scope, Variable** frame, uint8_t* local);
  // Fills `frame` with every name of `block` as found up `scope`'s chain, making nothing;
  // false if a name or a declared persistable variable is missing (Resolve would make it).
  // For a block that declares no local variable.
  static bool ResolveAbove(const PreparedBlock& block, const Scope& scope, Variable** frame);
  // Resolves name i of `block` in `scope` into frame[i]; true when it is (now) in `scope`.
  static bool ResolveName(const PreparedBlock& block, Scope& scope, size_t i, Variable** frame);
  // Runs the block's ops on its resolved variables. With `deferred`, `scope` is the parent
  // of the block's own scope, which the run makes when a kernel could tell
  // (RillKernelContext::ExposedScope).
  void RunOps(const PreparedBlock& block, const std::shared_ptr<Scope>& scope, Variable** frame,
              OpBoundaries& boundaries, bool deferred = false);
  // RunOps, recording each op's span in the profile or not (profiler.h).
  template <bool kProfile>
  void RunOpsAs(const PreparedBlock& block, const std::shared_ptr<Scope>& scope, Variable** frame,
                OpBoundaries& boundaries, bool deferred);

  const Registry& registry_;
  const std::shared_ptr<const Program> program_;
  Place place_;
  std::mutex prepare_mu_;
  std::vector<std::atomic<PreparedBlock*>> prepared_;                     // owned; deleted in ~Executor
  std::unordered_map<uint64_t, std::unique_ptr<AttrValue>> attr_values_;  // AttrValueOf's, by attr and type
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_EXECUTOR_H_
