#include "core/runtime/scope.h"

#include <algorithm>
#include <mutex>

namespace rill::core {

std::shared_ptr<Scope> Scope::NewRoot() { return std::make_shared<Scope>(Passkey{}, nullptr); }

std::shared_ptr<Scope> Scope::NewChild() {
  return std::make_shared<Scope>(Passkey{}, shared_from_this());
}

Variable* Scope::Var(const std::string& name) {
  {
    std::shared_lock lock(mu_);
    auto it = vars_.find(name);
    if (it != vars_.end()) return it->second.get();
  }
  std::unique_lock lock(mu_);
  auto& slot = vars_[name];
  if (!slot) {
    slot = std::make_unique<Variable>();
    count_.store(vars_.size(), std::memory_order_release);
  }
  return slot.get();
}

Variable* Scope::FindLocalVar(const std::string& name) const {
  if (count_.load(std::memory_order_acquire) == 0) return nullptr;
  std::shared_lock lock(mu_);
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
  std::shared_lock lock(mu_);
  std::vector<std::string> names;
  names.reserve(vars_.size());
  for (const auto& [name, var] : vars_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace rill::core
