#include "core/runtime/scope.h"

#include <algorithm>
#include <mutex>

namespace rill::core {

// With allocate_shared's count (16 bytes) in front, one 128-byte small object: a go block
// makes one, on one worker, and it may be freed on another.
static_assert(sizeof(Scope) <= 112, "a scope and its shared count fit the 128-byte small-object class");

std::shared_ptr<Scope> Scope::NewRoot() {
  return std::allocate_shared<Scope>(SmallObjectAllocator<Scope>(), Passkey{}, nullptr);
}

std::shared_ptr<Scope> Scope::NewChild() {
  auto child = std::allocate_shared<Scope>(SmallObjectAllocator<Scope>(), Passkey{}, shared_from_this());
  child->born_under_ = ChainVersion();
  return child;
}

uint64_t Scope::ChainVersion() const {
  uint64_t sum = 0;
  for (const Scope* s = this; s != nullptr; s = s->parent_.get()) sum += s->version();
  return sum;
}

void Scope::VarList::Clear() {
  Entry* e = head_.load(std::memory_order_relaxed);
  head_.store(nullptr, std::memory_order_relaxed);
  size_.store(0, std::memory_order_relaxed);
  filter_.store(0, std::memory_order_relaxed);
  index_.reset();
  while (e != nullptr) {
    Entry* next = e->next;
    delete e;
    e = next;
  }
}

Variable* Scope::VarList::Find(std::string_view name, SpinLock& mu) const {
  const size_t n = size();
  if (n == 0) return nullptr;
  if (n > kIndexFrom) {
    std::lock_guard lock(mu);
    return FindHoldingLock(name);
  }
  for (Entry* e = head_.load(std::memory_order_acquire); e != nullptr; e = e->next) {
    if (e->name.view() == name) return &e->var;
  }
  return nullptr;
}

Variable* Scope::VarList::FindHoldingLock(std::string_view name) const {
  if (index_ != nullptr) {
    auto it = index_->find(name);
    return it == index_->end() ? nullptr : it->second;
  }
  for (Entry* e = head_.load(std::memory_order_relaxed); e != nullptr; e = e->next) {
    if (e->name.view() == name) return &e->var;
  }
  return nullptr;
}

Variable* Scope::VarList::Add(const std::string& name, uint64_t bits) {
  Entry* e = new Entry(head_.load(std::memory_order_relaxed), name);
  const size_t n = size_.load(std::memory_order_relaxed) + 1;
  if (n > kIndexFrom) {
    if (index_ == nullptr) {
      index_ = std::make_unique<Index>();
      for (Entry* o = e->next; o != nullptr; o = o->next) index_->emplace(o->name.view(), &o->var);
    }
    index_->emplace(e->name.view(), &e->var);
  }
  filter_.store(filter_.load(std::memory_order_relaxed) | bits, std::memory_order_release);
  head_.store(e, std::memory_order_release);
  size_.store(n, std::memory_order_release);
  return &e->var;
}

Variable* Scope::Var(const std::string& name) { return Var(name, NameBits(name)); }

Variable* Scope::Var(const std::string& name, uint64_t bits) {
  const uint64_t seen = version();
  if (Variable* v = FindLocalVar(name, bits)) return v;
  return VarAfterMiss(name, bits, seen);
}

Variable* Scope::VarAfterMiss(const std::string& name, uint64_t bits, uint64_t seen) {
  std::lock_guard lock(mu_);
  // The list's size is published after its head: a lookup that began after reading `seen`
  // saw every variable counted in it.
  if (vars_.size() != seen) {
    if (Variable* v = vars_.FindHoldingLock(name)) return v;  // made meanwhile by another thread
  }
  return vars_.Add(name, bits);
}

Variable* Scope::FindLocalVar(const std::string& name) const { return FindLocalVar(name, 0); }

uint64_t Scope::NameBits(std::string_view name) {
  // FNV-1a: names are short, and a scope's Add hashes each; its top bits are the mixed ones.
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return (uint64_t{1} << (h >> 58)) | (uint64_t{1} << ((h >> 52) & 63));
}

Variable* Scope::FindLocalVar(const std::string& name, uint64_t bits) const {
  return vars_.MayHold(bits) ? vars_.Find(name, mu_) : nullptr;
}

Variable* Scope::FindVar(const std::string& name, uint64_t bits) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_.get()) {
    if (Variable* v = s->FindLocalVar(name, bits)) return v;
  }
  return nullptr;
}

Variable* Scope::FindVar(const std::string& name) const { return FindVar(name, 0); }

Scope* Scope::root() {
  Scope* s = this;
  while (s->parent_) s = s->parent_.get();
  return s;
}

std::vector<std::string> Scope::LocalVarNames() const {
  std::vector<std::string> names;
  names.reserve(vars_.size());
  vars_.ForEach([&](std::string_view name) { names.emplace_back(name); });
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace rill::core
