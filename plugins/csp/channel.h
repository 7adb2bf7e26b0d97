// plugins/csp/channel.h — Go's channels over Rill variables.
//
// Contract (the Go specification's, with values being whole variables):
//  - Capacity 0: a send and a receive rendezvous; the value goes straight from the
//    sender's variable into the receiver's. Capacity n > 0: a FIFO buffer of n values;
//    a send blocks only when it is full, a receive only when it is empty.
//  - Values are moved (the sender's variable is left empty) unless the send asks to copy.
//  - Close wakes every waiter: blocked receivers get "closed" (Recv returns false), blocked
//    senders fail. Values buffered before the close are still received; after that a
//    receive returns false at once. Send on a closed channel and closing twice fail.
//  - Waiting parks the task through the host (rill::Park), not the thread. A waiting task
//    holds a reference to the channel, so the channel outlives its waiters even if every
//    variable holding it is overwritten meanwhile; otherwise callers borrow it from its
//    variable (ChannelOf), which takes no reference: a shared count touched by the sender
//    and the receiver on every message made each one a cross-core cache miss.
//  - Every method is safe from any task or thread.
//
// Invariants (as in Go's runtime/chan.go), all under mu_:
//  - sendq_ non-empty implies the buffer is full (or cap 0); recvq_ non-empty implies the
//    buffer is empty. Never both queues non-empty.
//  - A waiter that belongs to a select is taken from a queue only after claiming its
//    select (Select::Claim), so exactly one of a select's cases completes.
//  - Channels are locked one at a time, except by select, which locks them in increasing
//    id() order; so no two lockers can deadlock.
#ifndef RILL_PLUGINS_CSP_CHANNEL_H_
#define RILL_PLUGINS_CSP_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "rill/sdk.hpp"

// Hidden like the SDK layer it builds on: these types never cross a library boundary.
namespace rill {
namespace [[gnu::visibility("hidden")]] csp {

class Channel;

// The state a select's waiters share: the first counterpart to claim it wins.
struct SelectGroup {
  std::atomic<bool> claimed{false};
  struct Waiter* winner = nullptr;  // written by the claimant under the winner's channel lock
  bool Claim() { return !claimed.exchange(true, std::memory_order_acq_rel); }
};

// A scalar's data type and bytes (RillHostApi::var_scalar: a one-element CPU tensor of
// shape [1], no LoD, at most 8 bytes). A channel buffers a copied scalar as these (see
// Channel::Slot).
struct Scalar {
  int32_t dtype = -1;  // -1: none
  uint64_t bits = 0;
};

// A task waiting in a queue (Go's sudog). Lives on the waiting task's stack.
struct Waiter {
  RillTask* task = nullptr;
  RillVariable* var = nullptr;  // send: the value to take; recv: where to put it
  bool copy = false;            // send: copy the value instead of moving it
  bool done = false;            // set by the counterpart, under the channel lock
  bool ok = false;              // recv: a value arrived (false: closed); send: delivered
  SelectGroup* select = nullptr;
  int case_index = -1;
  bool queued = false;  // in a WaitQueue now
  Waiter* prev = nullptr;
  Waiter* next = nullptr;
  // Last: read only when a receive takes this sender's value (into a full buffer's freed
  // slot, or itself on an unbuffered channel), and the fields above, which every queue
  // operation touches, stay within one cache line.
  Scalar scalar;  // send: var's value as a Scalar, when it is one and copied
};

// FIFO of waiters (intrusive).
class WaitQueue {
 public:
  bool empty() const { return head_ == nullptr; }
  size_t size() const;  // walks the queue: for descriptions, not per message
  void Push(Waiter* w);
  void Remove(Waiter* w);
  // The first waiter that can still be taken (claiming its select, if any); nullptr if none.
  Waiter* Pop();

 private:
  Waiter* head_ = nullptr;
  Waiter* tail_ = nullptr;
};

class Channel : public std::enable_shared_from_this<Channel> {
  struct Passkey {};
  static constexpr size_t kCacheLine = 64;

 public:
  // A new channel, always owned by a shared_ptr: a waiting task takes a reference.
  // `data_type` is a framework.proto VarType.Type: LOD_TENSOR (any tensor), a tensor
  // element type (BOOL ... INT8: a tensor of that dtype) or CHANNEL. Throws Error for an
  // unsupported data_type or a capacity out of range.
  static std::shared_ptr<Channel> Make(int32_t data_type, int64_t capacity);
  // A new channel as a variable's value (kChannelType), with that variable as its one
  // holder. Each variable holding the channel is a holder: copying the variable (assign,
  // go's binding) adds one with AddHolder, no allocation; destroying it calls
  // DropHolder. While any holder is left the channel keeps a reference to itself, so it
  // lives as long as a variable or a waiting task holds it.
  static Channel* MakeHeld(int32_t data_type, int64_t capacity);
  void AddHolder() { holders_.fetch_add(1, std::memory_order_relaxed); }
  void DropHolder();
  Channel(Passkey, int32_t data_type, int64_t capacity);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Blocks until `src`'s value is delivered or buffered. Throws Error on a closed channel
  // or when the task's run is ending. `ctx` and `what` describe the wait (deadlock report).
  void Send(Variable src, bool copy, RillKernelContext* ctx, const char* what);
  // Blocks until a value is moved into `dst` (returns true) or the channel is closed and
  // drained (returns false; `dst` is set to its zero value). Throws when the run is ending.
  bool Recv(Variable dst, RillKernelContext* ctx, const char* what);
  void Close();

  // Throws Error unless `v` holds a value this channel carries.
  void CheckElement(Variable v) const;
  uint64_t id() const { return id_; }
  int32_t data_type() const { return data_type_; }
  int64_t capacity() const { return capacity_; }
  std::string Describe();

 private:
  friend class Selector;

  // Queues `w` and parks until a counterpart completes it; mu_ is held (by `lock`) on
  // entry and on return. Throws, with `w` dequeued, when the task's run is ending.
  void WaitInQueue(std::unique_lock<SpinLock>& lock, WaitQueue& queue, Waiter& w, RillKernelContext* ctx,
                   const char* what);
  // Each of these runs with mu_ held and says whether the operation completed. `scalar`
  // (may be null) is src's value as a Scalar when it is one and copied. A receive given
  // `taken` leaves a buffered scalar there for the caller to write into dst after
  // unlocking; without it, dst is written under the lock.
  bool TrySendLocked(Variable src, bool copy, const Scalar* scalar, RillTask** wake);
  bool TryRecvLocked(Variable dst, bool* ok, RillTask** wake, Scalar* taken = nullptr);
  // A ring index: `i` < 2 * slots_ here, so a compare does what a division would.
  size_t Wrap(size_t i) const { return i >= slots_ ? i - slots_ : i; }
  void Lock() { mu_.lock(); }
  void Unlock() { mu_.unlock(); }

  // A buffered value. A copied scalar keeps its bytes here: a message then touches the
  // ring and the receiver's own tensor, written in place, instead of a tensor per slot
  // (a hundred slots' tensors cycling through the cache cost more than the copies).
  struct Slot {
    OwnedVariable var;  // the value, unless scalar.dtype >= 0 (then var is stale)
    Scalar scalar;
  };
  // With mu_ held (or from the constructor): makes the ring `slots` long (count_ <= slots
  // <= capacity_), its values in order from slot 0. Throws Error, changing nothing, when
  // memory runs out.
  [[gnu::noinline, gnu::cold]] void Resize(size_t slots);
  static void Store(Slot& slot, RillVariable* src, bool copy, const Scalar* scalar);
  static void Take(Slot& slot, RillVariable* dst, Scalar* taken);
  // With mu_ held: Store at the buffer's tail (count_ < capacity_), Take from its head
  // (count_ > 0). Send and Recv run these themselves when no one waits (the usual
  // buffered message), without TrySendLocked's and TryRecvLocked's saved registers.
  [[gnu::always_inline]] inline void PushBuffered(RillVariable* src, bool copy, const Scalar* scalar);
  [[gnu::always_inline]] inline void PopBuffered(RillVariable* dst, Scalar* taken);

  const int32_t data_type_;
  const int64_t capacity_;
  const uint64_t id_;
  // The ring: slots_ slots, grown by doubling as values arrive (a channel of capacity
  // 16M built every slot's variable up front). A full buffer (count_ == capacity_) has
  // slots_ == capacity_, so a sender waiting on it has a slot to enter when one is taken.
  std::unique_ptr<Slot[]> buf_;
  size_t slots_ = 0;
  // Each group of fields below is kept off the lines of the group before it by a
  // padding of a line's size (bytes that far apart never share a line), not by alignas:
  // an over-aligned Channel went through aligned operator new, which cost a daisy chain
  // ~400 instructions a channel against malloc's ~150.
  //
  // Written whenever a variable starts or stops holding the channel (a go block binding
  // it, at the block's start and end, on two workers): off the fields above, which every
  // send reads.
  char apart_from_reads_[kCacheLine];
  std::atomic<int64_t> holders_{0};  // variables holding the channel
  std::shared_ptr<Channel> self_;    // set while holders_ > 0
  // Written by every send and receive: kept off the fields above, which every send reads
  // before it locks (sharing a line with them made each of those reads a cross-core miss
  // while the other side held the lock).
  char apart_from_holders_[kCacheLine];
  SpinLock mu_;
  bool closed_ = false;
  size_t head_ = 0;   // next to receive
  size_t count_ = 0;  // values buffered
  WaitQueue sendq_, recvq_;
};

// A variable of type "csp.channel" holds a Channel* counted as one of its holders (see
// MakeHeld), so that copying the variable (assign, or binding it into a go block) shares
// the channel, as in Go.
constexpr const char* kChannelType = "csp.channel";
// The variable type's callbacks (csp_plugin.cc registers them).
void DropChannelHolder(void* channel);
void* AddChannelHolder(const void* channel);

// The channel type's handle, found on first use (one per process; see ChannelIn).
inline std::atomic<const RillVarType*> g_channel_type{nullptr};

// The channel `v` holds if it is a channel variable, else nullptr. Inline: every channel
// op asks, once a message. No variable holds a channel before the type is registered, so
// a handle not found yet finds none.
inline Channel* ChannelIn(Variable v) {
  const RillVarType* t = g_channel_type.load(std::memory_order_relaxed);
  if (t == nullptr) g_channel_type.store(t = Host().var_type_find(kChannelType), std::memory_order_relaxed);
  return static_cast<Channel*>(Host().var_custom(v.handle(), t));
}

// ChannelOf's error: `v` (named `name`) is missing or holds no channel.
[[noreturn, gnu::cold]] void ThrowNotAChannel(Variable v, const std::string& name);

// The channel variable `v` refers to, borrowed from it (valid while `v` holds it; see the
// file comment); throws a clear Error if it holds none. `name` is the variable's name,
// for the message.
inline Channel& ChannelOf(Variable v, const std::string& name) {
  if (Channel* ch = v ? ChannelIn(v) : nullptr) return *ch;
  ThrowNotAChannel(v, name);
}

// Sets `v` to its zero value after a receive from a closed channel: a tensor keeps its
// dtype and shape with every element zero; an empty variable stays empty.
void SetZeroValue(Variable v);

}  // namespace csp
}  // namespace rill

#endif  // RILL_PLUGINS_CSP_CHANNEL_H_
