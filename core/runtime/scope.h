// core/runtime/scope.h — a tree of name -> variable maps.
//
// Contract:
//  - A child holds a strong reference to its parent, so any scope keeps every scope it can
//    see alive: a `go` block holding its scope can outlive the block that started it.
//    Parents do not track children.
//  - Lookups walk up the chain; Var() creates only in this scope.
//  - Every method is safe to call from several threads at once. Variable* stay valid
//    while the scope lives (variables are never removed).
//  - Lookups in a scope take no lock: variables sit in a list that only grows at its head
//    (a go block's scope holds a handful), with a name index once it holds more than
//    VarList::kIndexFrom. Creating one takes the scope's lock. Each scope also keeps a
//    64-bit filter of its names (NameBits), so a lookup that carries a name's bits passes
//    over the scopes that cannot hold it.
//  - version() counts the variables created here. Since none is ever removed, a name
//    resolved through the chain resolves the same way for as long as no scope on the chain
//    changes version: a loop keeps its body's resolved names from step to step and checks
//    ChainVersion() instead of looking them up again.
#ifndef RILL_CORE_RUNTIME_SCOPE_H_
#define RILL_CORE_RUNTIME_SCOPE_H_

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/runtime/small_objects.h"
#include "core/runtime/variable.h"
#include "rill/spin_lock.hpp"

namespace rill::core {

class Scope : public std::enable_shared_from_this<Scope> {
  struct Passkey {};

 public:
  static std::shared_ptr<Scope> NewRoot();
  explicit Scope(Passkey, std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  std::shared_ptr<Scope> NewChild();
  // Whether the next step of a loop may run in `holder` again instead of a new sibling:
  // `holder` is the only reference (no go block started in it keeps it) and no ancestor
  // gained a variable since it was made, given the parent's ChainVersion() (a loop, which
  // needs it anyway, reads the chain once per step).
  static bool Reusable(const std::shared_ptr<Scope>& holder, uint64_t parent_chain_version) {
    return holder != nullptr && holder.use_count() == 1 && holder->BornUnder(parent_chain_version);
  }
  // Whether the next step of a loop may run in `holder` again although go blocks started in
  // it still hold it: it has no variables, so a go block sees through it exactly what it
  // would through a new empty sibling (a loop step that only starts go blocks). A kernel
  // that makes a variable in it by name later would show that variable to those blocks;
  // the executor's blocks make theirs when first resolved, before any go block starts.
  static bool Shareable(const std::shared_ptr<Scope>& holder, uint64_t parent_chain_version) {
    return holder != nullptr && holder->version() == 0 && holder->BornUnder(parent_chain_version);
  }
  // Finds `name` in this scope only, creating it if absent.
  Variable* Var(const std::string& name);
  // Finds `name` here or in an ancestor; nullptr if absent.
  Variable* FindVar(const std::string& name) const;
  Variable* FindLocalVar(const std::string& name) const;
  // The same, given NameBits(name): a scope whose name filter lacks those bits is skipped
  // without reading its variables (bits 0: none is). The executor keeps each block name's
  // bits: a go block's constant is looked up through every scope above it before it is made.
  static uint64_t NameBits(std::string_view name);
  Variable* FindVar(const std::string& name, uint64_t bits) const;
  Variable* FindLocalVar(const std::string& name, uint64_t bits) const;
  Variable* Var(const std::string& name, uint64_t bits);
  // Var for a caller that has just seen FindLocalVar(name, bits) miss, having read
  // version() == `seen` before it: makes `name` here unless another thread made it
  // meanwhile, looking for it again (under the lock) only if the scope has gained a
  // variable since `seen`.
  Variable* VarAfterMiss(const std::string& name, uint64_t bits, uint64_t seen);

  const std::shared_ptr<Scope>& parent() const { return parent_; }
  // The sum of the versions of every scope on the chain from here to the root; since
  // versions only grow, it changes exactly when one of them does.
  uint64_t ChainVersion() const;
  Scope* root();
  std::vector<std::string> LocalVarNames() const;
  uint64_t version() const { return vars_.size(); }

 private:
  // A scope's variables: one allocation each (name and variable together, from the
  // small-object caches, since a go block's scope is made on one worker and freed on
  // another), in a list that only grows at its head, so a lookup reads it without a lock.
  // Scopes past kIndexFrom variables (a program's root, with its parameters) also keep
  // a hash index, read under the scope's lock.
  class VarList {
   public:
    static constexpr size_t kIndexFrom = 8;
    VarList() = default;
    VarList(const VarList&) = delete;
    VarList& operator=(const VarList&) = delete;
    ~VarList() { Clear(); }

    size_t size() const { return size_.load(std::memory_order_acquire); }
    // False when no variable with NameBits `bits` is in the list: the union of its names'
    // bits (a 64-bit Bloom filter, two bits a name) lacks one of them.
    bool MayHold(uint64_t bits) const { return (filter_.load(std::memory_order_acquire) & bits) == bits; }
    // The variable named `name`, or nullptr. `mu` guards the index (taken only past
    // kIndexFrom variables).
    Variable* Find(std::string_view name, SpinLock& mu) const;
    Variable* FindHoldingLock(std::string_view name) const;
    // Adds `name` (absent), whose NameBits are `bits`; the caller holds the scope's lock.
    Variable* Add(const std::string& name, uint64_t bits);
    template <class F> void ForEach(F&& f) const {
      for (const Entry* e = head_.load(std::memory_order_acquire); e != nullptr; e = e->next) f(e->name.view());
    }

   private:
    // A variable's name in 16 bytes: up to 15 characters in place (a block's names, in
    // practice), a longer one on the heap. Half a std::string's size, it keeps an entry
    // within the 128-byte small-object class (the static_assert below Entry).
    class Name {
     public:
      explicit Name(std::string_view s) {
        if (s.size() < sizeof(bytes_)) {
          std::memcpy(bytes_, s.data(), s.size());
          bytes_[kLast] = static_cast<char>(s.size());
        } else {
          char* heap = new char[s.size()];
          std::memcpy(heap, s.data(), s.size());
          const uint32_t size = static_cast<uint32_t>(s.size());
          std::memcpy(bytes_, &heap, sizeof(heap));
          std::memcpy(bytes_ + sizeof(heap), &size, sizeof(size));
          bytes_[kLast] = kOnHeap;
        }
      }
      Name(const Name&) = delete;
      Name& operator=(const Name&) = delete;
      ~Name() {
        if (bytes_[kLast] == kOnHeap) delete[] heap();
      }
      std::string_view view() const {
        if (bytes_[kLast] != kOnHeap) return {bytes_, static_cast<size_t>(bytes_[kLast])};
        uint32_t size;
        std::memcpy(&size, bytes_ + sizeof(char*), sizeof(size));
        return {heap(), size};
      }

     private:
      static constexpr size_t kLast = 15;  // the length in place, or kOnHeap
      static constexpr char kOnHeap = 16;
      char* heap() const {
        char* p;
        std::memcpy(&p, bytes_, sizeof(p));
        return p;
      }
      char bytes_[16];
    };
    struct Entry {
      static void* operator new(size_t bytes) { return AllocateSmall(bytes); }
      static void operator delete(void* p, size_t bytes) { FreeSmall(p, bytes); }
      Entry(Entry* n, std::string_view s) : next(n), name(s) {}
      Entry* next;  // the entry made before this one; fixed once published
      Name name;
      Variable var;
    };
    static_assert(sizeof(Entry) <= 128, "an entry fits the 128-byte small-object class");
    using Index = std::unordered_map<std::string_view, Variable*>;
    void Clear();
    std::atomic<Entry*> head_{nullptr};  // newest first
    std::atomic<size_t> size_{0};        // published after head_: an index exists past kIndexFrom
    std::atomic<uint64_t> filter_{0};    // published before head_: a reader that misses a name's bits
                                         // reads before that name's entry is in the list
    std::unique_ptr<Index> index_;
  };
  bool BornUnder(uint64_t parent_chain_version) const { return !parent_ || parent_chain_version == born_under_; }

  const std::shared_ptr<Scope> parent_;
  uint64_t born_under_ = 0;  // parent_->ChainVersion() when the scope was made
  // Spin locks, not a mutex and a reader-writer lock: held for a hash lookup or an insert,
  // and taken several times per go block (its scope's variables, lookups up the chain), a
  // critical section shorter than a reader-writer lock's own bookkeeping.
  mutable SpinLock mu_;  // serialises Var's inserts; guards a large scope's index
  VarList vars_;         // its size() only grows, so it doubles as version()
};

}  // namespace rill::core

#endif  // RILL_CORE_RUNTIME_SCOPE_H_
