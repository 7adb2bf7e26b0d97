// core/runtime/kernel_context.h — host definitions of the ABI's RillScope and
// RillKernelContext handles.
//
// A RillScope refers to a Scope. Owned handles (scope_new_child, scope_retain)
// hold a strong reference and are freed by scope_release. The
// borrowed one a kernel gets from its context lives in the executor's run frame and holds
// none: whoever runs the block holds the scope, and a block run touches no shared count.
// So whatever keeps a scope past the call takes a reference of its own (Owner()).
// A RillKernelContext lives on the executor's stack for one kernel call.
#ifndef RILL_CORE_RUNTIME_KERNEL_CONTEXT_H_
#define RILL_CORE_RUNTIME_KERNEL_CONTEXT_H_

#include <memory>
#include <string>
#include <vector>

#include "core/runtime/op_instance.h"
#include "core/runtime/scope.h"

struct RillScope {
  std::shared_ptr<rill::core::Scope> scope;  // owns nothing in a borrowed handle

  // From the small-object caches: a go block's handle is made on one worker and
  // released on another.
  static void* operator new(size_t bytes) { return rill::core::AllocateSmall(bytes); }
  static void operator delete(void* p, size_t bytes) { rill::core::FreeSmall(p, bytes); }

  static RillScope Borrowed(rill::core::Scope* s) {
    return RillScope{std::shared_ptr<rill::core::Scope>(std::shared_ptr<rill::core::Scope>(), s)};
  }
  // A strong reference, for a holder that outlives the call (a retained handle, a task).
  std::shared_ptr<rill::core::Scope> Owner() const { return scope->shared_from_this(); }
};

namespace rill::core {
class Executor;
}

struct RillKernelContext {
  const RillOpInfo* op;
  rill::core::Variable** frame;  // the block's variables, by name id; null until found
  const std::vector<std::string>* frame_names;
  const uint64_t* frame_name_bits;  // Scope::NameBits of each frame name
  RillScope* scope;
  rill::core::Executor* executor;
  int32_t device_id;  // of the device the kernel runs on (0 on the CPU)
  // Non-null in a sub-block run that skipped making the block's own scope
  // (Executor::RunSubBlock): where that scope is kept once made (ExposedScope).
  std::shared_ptr<rill::core::Scope>* deferred_scope = nullptr;

  // The run's scope, for a call that hands it to the kernel or starts a go block in it: a
  // run that skipped making its block's own scope makes it now, so that nothing a kernel
  // does through the scope can tell the skip from a scope made up front. (The skip is
  // safe until then: the block's names all resolved above, and an empty child shows
  // exactly what its parent does.)
  RillScope* ExposedScope() {
    if (deferred_scope != nullptr && *deferred_scope == nullptr) {
      *deferred_scope = scope->scope->NewChild();
      *scope = RillScope::Borrowed(deferred_scope->get());
    }
    return scope;
  }

  // The i-th variable of `args` (one of op->inputs or op->outputs).
  rill::core::Variable* Arg(const RillOpInfo::Args* args, size_t i) const {
    return At(args != nullptr && i < args->ids.size() ? args->ids[i] : RillOpInfo::kNoArg);
  }

  // The variable at frame index `id` (RillOpInfo::kNoArg: none).
  rill::core::Variable* At(uint32_t id) const {
    if (id == RillOpInfo::kNoArg) return nullptr;
    rill::core::Variable*& v = frame[id];
    if (v == nullptr) v = scope->scope->FindVar((*frame_names)[id]);
    return v;
  }
};

#endif  // RILL_CORE_RUNTIME_KERNEL_CONTEXT_H_
