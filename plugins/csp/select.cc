// The select algorithm of Go's runtime/select.go: lock every channel, poll the cases in a
// random order, else enqueue a waiter on every channel (all sharing one SelectGroup) and
// park; the counterpart that claims the group first completes its case.
#include "select.h"

#include <algorithm>
#include <random>

namespace rill::csp {

// Locks a select's channels in increasing id order, each once. (A friend of Channel.)
class Selector {
 public:
  Selector(const SelectCase* cases, size_t n) : chans_(n) {
    // Insertion by id, dropping repeats: a select has a few cases.
    Channel** c = chans_.data();
    for (size_t i = 0; i < n; ++i) {
      if (cases[i].kind == SelectCase::kDefault) continue;
      Channel* ch = cases[i].channel;
      size_t at = count_;
      while (at > 0 && c[at - 1]->id() > ch->id()) --at;
      if (at > 0 && c[at - 1] == ch) continue;
      std::copy_backward(c + at, c + count_, c + count_ + 1);
      c[at] = ch;
      ++count_;
    }
  }
  void LockAll() {
    for (size_t i = 0; i < count_; ++i) chans_[i]->Lock();
  }
  void UnlockAll() {
    for (size_t i = count_; i > 0; --i) chans_[i - 1]->Unlock();
  }
  static void UnlockAllCallback(void* self) { static_cast<Selector*>(self)->UnlockAll(); }

  static bool closed(Channel* c) { return c->closed_; }
  static bool TrySend(Channel* c, RillVariable* v, RillTask** wake) {
    return c->TrySendLocked(Variable(v), false, nullptr, wake);
  }
  static bool TryRecv(Channel* c, RillVariable* v, bool* ok, RillTask** wake) {
    return c->TryRecvLocked(Variable(v), ok, wake);
  }
  static WaitQueue& queue(Channel* c, SelectCase::Kind kind) {
    return kind == SelectCase::kSend ? c->sendq_ : c->recvq_;
  }

 private:
  PerCase<Channel*> chans_;
  size_t count_ = 0;  // distinct channels, in chans_[0, count_)
};

namespace {

// wyrand (Go's cheaprand on 64-bit): one multiply a number, from a per-thread state seeded
// once. A select draws one per ready-case shuffle step, every round.
uint64_t NextRandom() {
  static thread_local uint64_t state = 0;
  if (state == 0) state = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}() ^ 1;
  state += 0xa0761d6478bd642fULL;
  const __uint128_t m = static_cast<__uint128_t>(state) * (state ^ 0xe7037ed1a0b428dbULL);
  return static_cast<uint64_t>(m >> 64) ^ static_cast<uint64_t>(m);
}

// Throws the error a send case on a closed channel gives.
[[noreturn]] void SendOnClosed() { throw Error("select: send on a closed channel", RILL_FAILED_PRECONDITION); }

}  // namespace

size_t RunSelect(const SelectCase* cases, size_t n, RillKernelContext* ctx, const char* what) {
  size_t default_case = n;
  PerCase<size_t> order_storage(n);  // the send and receive cases, shuffled
  size_t* const order = order_storage.data();
  size_t ordered = 0;
  for (size_t i = 0; i < n; ++i) {
    if (cases[i].kind == SelectCase::kDefault) {
      default_case = i;
      continue;
    }
    if (cases[i].kind == SelectCase::kSend) cases[i].channel->CheckElement(Variable(cases[i].var));
    order[ordered++] = i;
  }
  for (size_t i = ordered; i > 1; --i) std::swap(order[i - 1], order[NextRandom() % i]);

  Selector locks(cases, n);
  locks.LockAll();
  // Poll: the first ready case in random order wins.
  for (size_t k = 0; k < ordered; ++k) {
    const size_t i = order[k];
    const SelectCase& c = cases[i];
    Channel* ch = c.channel;
    RillTask* wake = nullptr;
    bool ok = true;
    bool ready = false;
    if (c.kind == SelectCase::kSend) {
      if (Selector::closed(ch)) {
        locks.UnlockAll();
        SendOnClosed();
      }
      try {
        ready = Selector::TrySend(ch, c.var, &wake);
      } catch (...) {  // no memory to buffer the value
        locks.UnlockAll();
        throw;
      }
    } else {
      ready = Selector::TryRecv(ch, c.var, &ok, &wake);
    }
    if (ready) {
      if (wake != nullptr) Unpark(wake);
      locks.UnlockAll();
      if (!ok) SetZeroValue(Variable(c.var));
      return i;
    }
  }
  if (default_case < n) {
    locks.UnlockAll();
    return default_case;
  }

  // Block: one waiter per case, all in one group. While parked, the variables the cases
  // borrowed their channels from may be overwritten: hold each channel meanwhile. (Declared
  // after `locks`, so dropped before it, and always after the last UnlockAll.)
  PerCase<std::shared_ptr<Channel>> keep(n);
  for (size_t k = 0; k < ordered; ++k) keep[order[k]] = cases[order[k]].channel->shared_from_this();
  SelectGroup group;
  PerCase<Waiter> waiters(n);
  RillTask* self = CurrentTask();
  for (size_t k = 0; k < ordered; ++k) {
    const size_t i = order[k];
    Waiter& w = waiters[i];
    w.task = self;
    w.var = cases[i].var;
    w.select = &group;
    w.case_index = static_cast<int>(i);
    Selector::queue(cases[i].channel, cases[i].kind).Push(&w);
  }
  const auto dequeue_all = [&] {
    for (size_t k = 0; k < ordered; ++k) {
      const size_t i = order[k];
      Selector::queue(cases[i].channel, cases[i].kind).Remove(&waiters[i]);
    }
  };
  for (;;) {
    RillStatus* st = Park(ctx, what, &Selector::UnlockAllCallback, &locks);
    locks.LockAll();
    if (group.winner != nullptr) {
      if (st != nullptr) Host().status_release(st);
      break;
    }
    if (st != nullptr) {
      dequeue_all();
      locks.UnlockAll();
      Check(st);
    }
  }
  dequeue_all();
  locks.UnlockAll();
  const Waiter* w = group.winner;
  const size_t i = static_cast<size_t>(w->case_index);
  if (!w->ok) {
    if (cases[i].kind == SelectCase::kSend) SendOnClosed();
    SetZeroValue(Variable(cases[i].var));
  }
  return i;
}

}  // namespace rill::csp
