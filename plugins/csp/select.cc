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
  explicit Selector(const std::vector<SelectCase>& cases) {
    for (const SelectCase& c : cases) {
      if (c.kind != SelectCase::kDefault) chans_.push_back(c.channel.get());
    }
    std::sort(chans_.begin(), chans_.end(), [](Channel* a, Channel* b) { return a->id() < b->id(); });
    chans_.erase(std::unique(chans_.begin(), chans_.end()), chans_.end());
  }
  void LockAll() {
    for (Channel* c : chans_) c->Lock();
  }
  void UnlockAll() {
    for (auto it = chans_.rbegin(); it != chans_.rend(); ++it) (*it)->Unlock();
  }
  static void UnlockAllCallback(void* self) { static_cast<Selector*>(self)->UnlockAll(); }

  static bool closed(Channel* c) { return c->closed_; }
  static bool TrySend(Channel* c, RillVariable* v, RillTask** wake) { return c->TrySendLocked(Variable(v), false, wake); }
  static bool TryRecv(Channel* c, RillVariable* v, bool* ok, RillTask** wake) {
    return c->TryRecvLocked(Variable(v), ok, wake);
  }
  static WaitQueue& queue(Channel* c, SelectCase::Kind kind) {
    return kind == SelectCase::kSend ? c->sendq_ : c->recvq_;
  }

 private:
  std::vector<Channel*> chans_;
};

namespace {

uint64_t NextRandom() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

// Throws the error a send case on a closed channel gives.
[[noreturn]] void SendOnClosed() { throw Error("select: send on a closed channel", RILL_FAILED_PRECONDITION); }

}  // namespace

size_t RunSelect(const std::vector<SelectCase>& cases, RillKernelContext* ctx, const char* what) {
  size_t default_case = cases.size();
  std::vector<size_t> order;
  order.reserve(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].kind == SelectCase::kDefault) {
      default_case = i;
      continue;
    }
    if (cases[i].kind == SelectCase::kSend) cases[i].channel->CheckElement(Variable(cases[i].var));
    order.push_back(i);
  }
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[NextRandom() % i]);

  Selector locks(cases);
  locks.LockAll();
  // Poll: the first ready case in random order wins.
  for (size_t i : order) {
    const SelectCase& c = cases[i];
    Channel* ch = c.channel.get();
    RillTask* wake = nullptr;
    bool ok = true;
    bool ready = false;
    if (c.kind == SelectCase::kSend) {
      if (Selector::closed(ch)) {
        locks.UnlockAll();
        SendOnClosed();
      }
      ready = Selector::TrySend(ch, c.var, &wake);
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
  if (default_case < cases.size()) {
    locks.UnlockAll();
    return default_case;
  }

  // Block: one waiter per case, all in one group.
  SelectGroup group;
  std::vector<Waiter> waiters(cases.size());
  RillTask* self = CurrentTask();
  for (size_t i : order) {
    Waiter& w = waiters[i];
    w.task = self;
    w.var = cases[i].var;
    w.select = &group;
    w.case_index = static_cast<int>(i);
    Selector::queue(cases[i].channel.get(), cases[i].kind).Push(&w);
  }
  const auto dequeue_all = [&] {
    for (size_t i : order) Selector::queue(cases[i].channel.get(), cases[i].kind).Remove(&waiters[i]);
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
