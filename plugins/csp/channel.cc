#include "channel.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

namespace rill::csp {
namespace {

constexpr int32_t kLodTensor = 7;
constexpr int32_t kChannel = 16;
constexpr int64_t kMaxCapacity = int64_t{1} << 24;

std::atomic<uint64_t> g_next_id{1};

void UnlockSpinLock(void* mu) { static_cast<SpinLock*>(mu)->unlock(); }

// The slots a buffered channel starts with; its ring doubles from there, up to its
// capacity, as values arrive.
constexpr size_t kFirstSlots = 16;

// Moves or copies `from` into `to`; a copied scalar (`scalar`: its bytes, or null) is
// written as its bytes, in place when `to` holds a scalar already, with no tensor copy.
void Transfer(RillVariable* to, RillVariable* from, bool copy, const Scalar* scalar) {
  if (scalar != nullptr && scalar->dtype >= 0) {
    Variable(to).SetScalar(scalar->dtype, scalar->bits);
  } else if (copy) {
    Variable(to).CopyFrom(Variable(from));
  } else {
    Variable(to).MoveFrom(Variable(from));
  }
}

// `v`'s value as a Scalar, if it is one; else dtype -1 (var_scalar writes nothing then).
Scalar ScalarOf(Variable v) {
  Scalar s;
  v.GetScalar(&s.dtype, &s.bits);
  return s;
}

// Completes waiter `w` (taken from a queue) and records it as its select's winner.
void Complete(Waiter* w, bool ok) {
  w->ok = ok;
  w->done = true;
  if (w->select != nullptr) w->select->winner = w;
}

}  // namespace

// ---- WaitQueue ------------------------------------------------------------------------------

void WaitQueue::Push(Waiter* w) {
  w->next = nullptr;
  w->prev = tail_;
  if (tail_ != nullptr) tail_->next = w;
  else head_ = w;
  tail_ = w;
  w->queued = true;
}

size_t WaitQueue::size() const {
  size_t n = 0;
  for (const Waiter* w = head_; w != nullptr; w = w->next) ++n;
  return n;
}

void WaitQueue::Remove(Waiter* w) {
  if (!w->queued) return;
  if (w->prev != nullptr) w->prev->next = w->next;
  else head_ = w->next;
  if (w->next != nullptr) w->next->prev = w->prev;
  else tail_ = w->prev;
  w->prev = w->next = nullptr;
  w->queued = false;
}

Waiter* WaitQueue::Pop() {
  while (Waiter* w = head_) {
    Remove(w);
    if (w->select == nullptr || w->select->Claim()) return w;
    // Another case of that select already won: drop this stale waiter.
  }
  return nullptr;
}

// ---- Channel --------------------------------------------------------------------------------

std::shared_ptr<Channel> Channel::Make(int32_t data_type, int64_t capacity) {
  return std::make_shared<Channel>(Passkey{}, data_type, capacity);
}

Channel* Channel::MakeHeld(int32_t data_type, int64_t capacity) {
  std::shared_ptr<Channel> made = Make(data_type, capacity);
  Channel* ch = made.get();
  ch->holders_.store(1, std::memory_order_relaxed);
  ch->self_ = std::move(made);
  return ch;
}

void Channel::DropHolder() {
  // The last holder: no variable can copy the channel any more (a copy needs a holder),
  // so nothing else touches self_. Waiting tasks keep their own references.
  if (holders_.fetch_sub(1, std::memory_order_acq_rel) == 1) std::shared_ptr<Channel> last = std::move(self_);
}

void DropChannelHolder(void* channel) { static_cast<Channel*>(channel)->DropHolder(); }
void* AddChannelHolder(const void* channel) {
  auto* ch = const_cast<Channel*>(static_cast<const Channel*>(channel));
  ch->AddHolder();
  return ch;
}

Channel::Channel(Passkey, int32_t data_type, int64_t capacity)
    : data_type_(data_type), capacity_(capacity), id_(g_next_id.fetch_add(1)) {
  if (data_type != kLodTensor && data_type != kChannel && DataTypeSize(data_type) == 0) {
    throw Error("channel data_type " + std::to_string(data_type) +
                " is not supported: use LOD_TENSOR (7), a tensor element type (BOOL 0 ... FP64 6, "
                "SIZE_T 19 ... COMPLEX128 24) or CHANNEL (16)");
  }
  if (capacity < 0 || capacity > kMaxCapacity) {
    throw Error(
        "channel capacity " + std::to_string(capacity) + " is out of range [0, " + std::to_string(kMaxCapacity) + "]",
        RILL_OUT_OF_RANGE);
  }
  if (capacity > 0) Resize(std::min(static_cast<size_t>(capacity), kFirstSlots));
}

void Channel::Resize(size_t slots) {
  std::unique_ptr<Slot[]> grown;
  try {
    grown = std::make_unique<Slot[]>(slots);
  } catch (const std::exception&) {  // bad_alloc, or Error from a slot's variable (OwnedVariable)
  }
  if (grown == nullptr) {
    throw Error("out of memory growing a channel's buffer to " + std::to_string(slots) + " values (capacity " +
                    std::to_string(capacity_) + ", " + std::to_string(count_) + " buffered)",
                RILL_RESOURCE_EXHAUSTED);
  }
  // The buffered values move to slots [0, count_), oldest first; every old slot's variable
  // is swapped over, so the memory a receive left in it is reused here too.
  for (size_t i = 0; i < std::min(slots_, slots); ++i) {
    Slot& from = buf_[Wrap(head_ + i)];
    grown[i].scalar = from.scalar;
    grown[i].var.get().SwapWith(from.var.get());
  }
  buf_ = std::move(grown);
  slots_ = slots;
  head_ = 0;
}

Channel::~Channel() = default;

void Channel::CheckElement(Variable v) const {
  if (!v.initialized()) throw Error("the value to send holds nothing (was it moved by an earlier send?)");
  if (data_type_ == kChannel) {
    if (ChannelIn(v) == nullptr) throw Error("this channel carries channels; the value to send holds " + v.Describe());
    return;
  }
  RillTensor* t = nullptr;
  if (RillStatus* st = Host().var_tensor(v.handle(), &t)) {
    Host().status_release(st);
    throw Error("this channel carries tensors; the value to send holds " + v.Describe());
  }
  if (data_type_ == kLodTensor) return;  // any tensor
  const int32_t dtype = Tensor(t).dtype();
  if (dtype != data_type_) {
    throw Error(std::string("this channel carries ") + DataTypeName(data_type_) + " tensors; the value is " +
                DataTypeName(dtype));
  }
}

// Puts a sent value into `slot`: its bytes when it is a copied scalar, else the variable.
void Channel::Store(Slot& slot, RillVariable* src, bool copy, const Scalar* scalar) {
  if (scalar != nullptr && scalar->dtype >= 0) {
    slot.scalar = *scalar;
    return;
  }
  slot.scalar.dtype = -1;
  Transfer(slot.var.get().handle(), src, copy, nullptr);
}

// Takes a buffered value out of `slot` into `dst`, or into `*taken` when it is a scalar
// and the caller delivers it (taken != nullptr).
void Channel::Take(Slot& slot, RillVariable* dst, Scalar* taken) {
  if (slot.scalar.dtype >= 0) {
    const Scalar s = slot.scalar;
    slot.scalar.dtype = -1;
    if (taken != nullptr) *taken = s;
    else Variable(dst).SetScalar(s.dtype, s.bits);
    return;
  }
  // The slot gets `dst`'s old value in exchange: the next send copied into it reuses that
  // memory.
  slot.var.get().SwapWith(Variable(dst));
}

void Channel::PushBuffered(RillVariable* src, bool copy, const Scalar* scalar) {
  if (count_ == slots_) [[unlikely]]
    Resize(std::min(2 * slots_, static_cast<size_t>(capacity_)));
  Store(buf_[Wrap(head_ + count_)], src, copy, scalar);
  ++count_;
}

void Channel::PopBuffered(RillVariable* dst, Scalar* taken) {
  Take(buf_[head_], dst, taken);
  head_ = Wrap(head_ + 1);
  --count_;
}

bool Channel::TrySendLocked(Variable src, bool copy, const Scalar* scalar, RillTask** wake) {
  if (Waiter* r = recvq_.empty() ? nullptr : recvq_.Pop()) {  // a receiver is waiting: the buffer is empty
    Transfer(r->var, src.handle(), copy, scalar);
    Complete(r, true);
    *wake = r->task;
    return true;
  }
  if (count_ < static_cast<size_t>(capacity_)) {
    PushBuffered(src.handle(), copy, scalar);
    return true;
  }
  return false;
}

bool Channel::TryRecvLocked(Variable dst, bool* ok, RillTask** wake, Scalar* taken) {
  if (Waiter* s = sendq_.empty() ? nullptr : sendq_.Pop()) {  // a sender is waiting: the buffer is full (or cap 0)
    if (capacity_ == 0) {
      Transfer(dst.handle(), s->var, s->copy, &s->scalar);
    } else {
      // Take the oldest value; the sender's goes in at the tail, which is the slot just
      // freed since the buffer was full.
      Take(buf_[head_], dst.handle(), taken);
      Store(buf_[head_], s->var, s->copy, &s->scalar);
      head_ = Wrap(head_ + 1);
    }
    Complete(s, true);
    *wake = s->task;
    *ok = true;
    return true;
  }
  if (count_ > 0) {
    PopBuffered(dst.handle(), taken);
    *ok = true;
    return true;
  }
  if (closed_) {
    *ok = false;
    return true;
  }
  return false;
}

void Channel::WaitInQueue(std::unique_lock<SpinLock>& lock, WaitQueue& queue, Waiter& w, RillKernelContext* ctx,
                          const char* what) {
  queue.Push(&w);
  for (;;) {
    lock.release();  // Park's unlock callback releases it once this task is parked
    RillStatus* st = Park(ctx, what, &UnlockSpinLock, &mu_);
    lock = std::unique_lock(mu_);
    if (w.done) {
      if (st != nullptr) Host().status_release(st);
      return;
    }
    if (st != nullptr) {
      queue.Remove(&w);
      lock.unlock();
      Check(st);
    }
  }
}

void Channel::Send(Variable src, bool copy, RillKernelContext* ctx, const char* what) {
  // Read before locking: the lock is held for the store alone. A scalar (the usual value)
  // is a tensor of a known dtype, so this one call also checks it; anything else gets
  // CheckElement's calls and messages.
  Scalar scalar = data_type_ != kChannel ? ScalarOf(src) : Scalar{};
  if (scalar.dtype < 0 || (data_type_ != kLodTensor && scalar.dtype != data_type_)) CheckElement(src);
  if (!copy) scalar = Scalar{};   // only a copy goes as its bytes (a move hands the tensor on)
  std::shared_ptr<Channel> keep;  // set before waiting; outlives `lock` (see the header)
  std::unique_lock lock(mu_);
  if (closed_) throw Error("send on a closed channel", RILL_FAILED_PRECONDITION);
  if (recvq_.empty() && count_ < static_cast<size_t>(capacity_)) {  // the usual buffered send
    PushBuffered(src.handle(), copy, &scalar);
    return;
  }
  RillTask* wake = nullptr;
  if (TrySendLocked(src, copy, &scalar, &wake)) {
    if (wake != nullptr) Unpark(wake);  // under the lock: the waiter cannot be gone yet
    return;
  }
  Waiter w;
  w.task = CurrentTask();
  w.var = src.handle();
  w.copy = copy;
  w.scalar = scalar;
  keep = shared_from_this();
  WaitInQueue(lock, sendq_, w, ctx, what);
  if (!w.ok) throw Error("send on a closed channel (it was closed while the send waited)", RILL_FAILED_PRECONDITION);
}

bool Channel::Recv(Variable dst, RillKernelContext* ctx, const char* what) {
  std::shared_ptr<Channel> keep;  // set before waiting; outlives `lock` (see the header)
  std::unique_lock lock(mu_);
  bool ok = false;
  RillTask* wake = nullptr;
  Scalar taken;                        // a buffered scalar, written into dst once the lock is released
  if (count_ > 0 && sendq_.empty()) {  // the usual buffered receive
    PopBuffered(dst.handle(), &taken);
    ok = true;
  } else if (!TryRecvLocked(dst, &ok, &wake, &taken)) {
    Waiter w;
    w.task = CurrentTask();
    w.var = dst.handle();
    keep = shared_from_this();
    WaitInQueue(lock, recvq_, w, ctx, what);
    ok = w.ok;
  } else if (wake != nullptr) {
    Unpark(wake);
  }
  lock.unlock();
  if (taken.dtype >= 0) dst.SetScalar(taken.dtype, taken.bits);
  if (!ok) SetZeroValue(dst);
  return ok;
}

void Channel::Close() {
  std::lock_guard lock(mu_);
  if (closed_) throw Error("close of a closed channel", RILL_FAILED_PRECONDITION);
  closed_ = true;
  while (Waiter* r = recvq_.Pop()) {
    Complete(r, false);
    Unpark(r->task);
  }
  while (Waiter* s = sendq_.Pop()) {
    Complete(s, false);
    Unpark(s->task);
  }
}

std::string Channel::Describe() {
  std::lock_guard lock(mu_);
  return "channel of " +
         std::string(data_type_ == kLodTensor ? "LOD_TENSOR"
                     : data_type_ == kChannel ? "CHANNEL"
                                              : DataTypeName(data_type_)) +
         ", capacity " + std::to_string(capacity_) + ", " + std::to_string(count_) + " buffered, " +
         std::to_string(sendq_.size()) + " senders and " + std::to_string(recvq_.size()) + " receivers waiting, " +
         (closed_ ? "closed" : "open");
}

void ThrowNotAChannel(Variable v, const std::string& name) {
  if (!v) throw Error("channel '" + name + "' was never created (no such variable)", RILL_FAILED_PRECONDITION);
  if (!v.initialized()) {
    throw Error("channel '" + name + "' was never created (run channel_create first)", RILL_FAILED_PRECONDITION);
  }
  throw Error("'" + name + "' is not a channel: it holds " + v.Describe());
}

void SetZeroValue(Variable v) {
  if (!v || !v.initialized()) return;
  RillTensor* t = nullptr;
  if (RillStatus* st = Host().var_tensor(v.handle(), &t)) {  // not a tensor: the zero value is empty
    Host().status_release(st);
    v.MoveFrom(OwnedVariable().get());
    return;
  }
  Tensor tensor(t);
  const std::vector<int64_t> dims = tensor.dims();
  const int32_t dtype = tensor.dtype();
  void* data = tensor.Allocate(dtype, dims.data(), dims.size(), RILL_CPU, 0);
  std::memset(data, 0, static_cast<size_t>(tensor.numel()) * DataTypeSize(dtype));
}

}  // namespace rill::csp
