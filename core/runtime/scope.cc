#include "core/runtime/scope.h"

#include <algorithm>
#include <mutex>

namespace rill::core {

std::shared_ptr<Scope> Scope::NewRoot() {
  return std::allocate_shared<Scope>(SmallObjectAllocator<Scope>(), Passkey{}, nullptr);
}

std::shared_ptr<Scope> Scope::NewChild() { return NewChild(ChildKey{}); }

std::shared_ptr<Scope> Scope::NewChild(ChildKey key) {
  auto child = std::allocate_shared<Scope>(SmallObjectAllocator<Scope>(), Passkey{}, shared_from_this());
  child->key_ = key;
  const uint64_t now = ChainVersion();
  child->born_under_ = now;
  if (key.op == 0) return child;  // unkeyed: always new
  Leftover taken;  // destroyed after the lock: a variable's destructor may release scopes
  {
    std::lock_guard lock(leftovers_mu_);
    auto it = std::find_if(leftovers_.begin(), leftovers_.end(), [&](const Leftover& l) { return l.key == key; });
    if (it == leftovers_.end()) return child;
    taken = std::move(*it);
    leftovers_.erase(it);
  }
  if (taken.born_under == now) {  // else stale: a name made locally may resolve above now
    child->vars_ = std::move(taken.vars);
    child->count_.store(taken.count, std::memory_order_release);
    child->run_cache_ = std::move(taken.run_cache);
  }
  return child;
}

// Runs when the last holder lets go, so nobody can reach vars_ any more; the parent, which
// this scope holds, is still alive.
Scope::~Scope() {
  // A parent only this scope holds goes right after it, and no one can make a child of it
  // meanwhile: nobody would take the variables over (a go block's scope, last holder of
  // its loop step's).
  if (key_.op == 0 || !parent_ || vars_.empty() || parent_.use_count() == 1) return;
  Leftover l{key_, born_under_, std::move(vars_), count_.load(std::memory_order_relaxed), std::move(run_cache_)};
  Leftover dropped;  // destroyed after the lock, as above
  {
    std::lock_guard lock(parent_->leftovers_mu_);
    auto& all = parent_->leftovers_;
    auto it = std::find_if(all.begin(), all.end(), [&](const Leftover& o) { return o.key == key_; });
    if (it == all.end() && all.size() == kLeftovers) it = all.begin();  // the oldest goes
    if (it != all.end()) {
      dropped = std::move(*it);
      all.erase(it);
    }
    all.push_back(std::move(l));
  }
}

uint64_t Scope::ChainVersion() const {
  uint64_t sum = 0;
  for (const Scope* s = this; s != nullptr; s = s->parent_.get()) sum += s->version();
  return sum;
}

bool Scope::AncestorsUnchanged() const { return !parent_ || parent_->ChainVersion() == born_under_; }

Variable* Scope::Var(const std::string& name) {
  {
    std::lock_guard lock(mu_);
    auto it = vars_.find(name);
    if (it != vars_.end()) return it->second.get();
  }
  auto fresh = std::make_unique<Variable>();  // allocated outside the lock
  std::lock_guard lock(mu_);
  auto [it, inserted] = vars_.try_emplace(name, std::move(fresh));
  if (inserted) count_.store(vars_.size(), std::memory_order_release);
  return it->second.get();
}

Variable* Scope::FindLocalVar(const std::string& name) const {
  if (count_.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard lock(mu_);
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : it->second.get();
}

Variable* Scope::FindVar(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_.get()) {
    if (Variable* v = s->FindLocalVar(name)) return v;
  }
  return nullptr;
}

Scope* Scope::root() {
  Scope* s = this;
  while (s->parent_) s = s->parent_.get();
  return s;
}

std::vector<std::string> Scope::LocalVarNames() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  names.reserve(vars_.size());
  for (const auto& [name, var] : vars_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace rill::core
