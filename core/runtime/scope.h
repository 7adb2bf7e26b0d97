// core/runtime/scope.h — a tree of name -> variable maps.
//
// Contract:
//  - A child holds a strong reference to its parent, so any scope keeps every scope it can
//    see alive: a `go` block holding its scope can outlive the block that started it.
//    Parents do not track children.
//  - Lookups walk up the chain; Var() creates only in this scope.
//  - Every method is safe to call from several threads at once. Variable* stay valid
//    while the scope lives (variables are never removed).
//  - version() counts the variables created here. Since none is ever removed, a name
//    resolved through the chain resolves the same way for as long as no scope on the chain
//    changes version: the executor keeps a block's resolved names in the scope it ran in
//    (its run cache) and checks the chain's versions instead of looking them up again.
#ifndef RILL_CORE_RUNTIME_SCOPE_H_
#define RILL_CORE_RUNTIME_SCOPE_H_

#include <atomic>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/runtime/variable.h"

namespace rill::core {

class Scope : public std::enable_shared_from_this<Scope> {
  struct Passkey {};

 public:
  static std::shared_ptr<Scope> NewRoot();
  explicit Scope(Passkey, std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  std::shared_ptr<Scope> NewChild();
  // Finds `name` in this scope only, creating it if absent.
  Variable* Var(const std::string& name);
  // Finds `name` here or in an ancestor; nullptr if absent.
  Variable* FindVar(const std::string& name) const;
  Variable* FindLocalVar(const std::string& name) const;

  const std::shared_ptr<Scope>& parent() const { return parent_; }
  Scope* root();
  std::vector<std::string> LocalVarNames() const;
  uint64_t version() const { return count_.load(std::memory_order_acquire); }

  // What the executor keeps between runs of a block in this scope (executor.cc defines
  // the cache; `tag` names the block that ran here last).
  struct RunCache {
    virtual ~RunCache() = default;
  };
  struct RunCacheSlot {
    std::unique_ptr<RunCache> cache;
    uint64_t tag = 0;
  };
  // The slot, for one run at a time: null while another run holds it. Give it back with
  // ReleaseRunCache.
  RunCacheSlot* ClaimRunCache() {
    return run_cache_busy_.exchange(true, std::memory_order_acquire) ? nullptr : &run_cache_;
  }
  void ReleaseRunCache() { run_cache_busy_.store(false, std::memory_order_release); }

 private:
  const std::shared_ptr<Scope> parent_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<Variable>> vars_;
  // vars_.size(), read without mu_: most scopes a lookup passes through (a loop step's,
  // a go block's) are empty, and skipping their lock halves a lookup's cost.
  // It only grows, so it doubles as version().
  std::atomic<size_t> count_{0};
  std::atomic<bool> run_cache_busy_{false};
  RunCacheSlot run_cache_;
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_SCOPE_H_
