#include "mpi_world.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace rill::dist {
namespace {

constexpr size_t kChunk = size_t{1} << 30;  // bytes per MPI message: counts are ints

std::string MpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(code, text, &n);
  return std::string(text, n);
}

}  // namespace

struct MpiWorld::Transfer {
  Done done;
  int pending = 0;  // its requests still active
  std::string error;
};

struct MpiWorld::Op {
  enum Kind { kSend, kReceive, kAllGather };
  explicit Op(Kind k) : kind(k) {}
  Kind kind;
  int rank = 0, tag = 0;
  void* data = nullptr;  // kAllGather: the receive buffer (size() records)
  size_t bytes = 0;
  const void* send = nullptr;  // kAllGather: this rank's record
  Done done;
};

MpiWorld& MpiWorld::Get(std::chrono::milliseconds deadline) {
  static MpiWorld world;
  std::unique_lock<std::mutex> lock(world.mu_);
  // MPI_Init waits for every rank of the job to start MPI.
  if (!world.ready_.wait_for(lock, deadline, [&] { return world.started_; })) {
    throw std::runtime_error("MPI_Init did not finish within " + std::to_string(deadline.count()) +
                             " ms (RILL_RPC_DEADLINE_MS): not every rank of the MPI job started MPI (a rank never "
                             "started its program, or runs one without the MPI transport's ops)");
  }
  if (!world.init_error_.empty()) throw std::runtime_error(world.init_error_);
  return world;
}

std::atomic<bool> MpiWorld::abort_at_exit_{false};

void MpiWorld::AbortAtExit() { abort_at_exit_ = true; }

MpiWorld::MpiWorld() : thread_([this] { Loop(); }) {}

MpiWorld::~MpiWorld() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    if (!started_) {  // still in MPI_Init, which may never return: the process ends without it
      thread_.detach();
      return;
    }
  }
  wake_.notify_all();
  thread_.join();
}

int MpiWorld::NextTag() { return 1 + next_tag_.fetch_add(1, std::memory_order_relaxed) % tag_ub_; }

void MpiWorld::Send(int rank, int tag, const void* data, size_t bytes, Done done) {
  Op op(Op::kSend);
  op.rank = rank;
  op.tag = tag;
  op.data = const_cast<void*>(data);  // MPI_Isend reads it only
  op.bytes = bytes;
  op.done = std::move(done);
  Post(std::move(op));
}

void MpiWorld::Receive(int rank, int tag, void* data, size_t bytes, Done done) {
  Op op(Op::kReceive);
  op.rank = rank;
  op.tag = tag;
  op.data = data;
  op.bytes = bytes;
  op.done = std::move(done);
  Post(std::move(op));
}

std::vector<std::string> MpiWorld::AllGather(const std::string& record, std::chrono::milliseconds deadline) {
  // Shared with the MPI thread: a caller that gives up leaves the buffers to it.
  struct Exchange {
    std::string mine;
    std::vector<char> all;
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    std::string error;
  };
  auto x = std::make_shared<Exchange>();
  x->mine = record;
  x->all.resize(record.size() * static_cast<size_t>(size_));
  Op op(Op::kAllGather);
  op.send = x->mine.data();
  op.data = x->all.data();
  op.bytes = record.size();
  op.done = [x](const std::string& error) {
    std::lock_guard<std::mutex> lock(x->mu);
    x->done = true;
    x->error = error;
    x->done_cv.notify_all();
  };
  Post(std::move(op));
  std::unique_lock<std::mutex> lock(x->mu);
  if (!x->done_cv.wait_for(lock, deadline, [&] { return x->done; })) {
    throw std::runtime_error("not every rank of the MPI job (" + std::to_string(size_) + " ranks) joined within " +
                             std::to_string(deadline.count()) +
                             " ms (RILL_RPC_DEADLINE_MS): a rank never started "
                             "its program, or runs one without the MPI transport's ops");
  }
  if (!x->error.empty()) throw std::runtime_error("exchanging roles over MPI: " + x->error);
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r) out.emplace_back(x->all.data() + r * record.size(), record.size());
  return out;
}

void MpiWorld::SendRequest(int rank, std::string message, Done done) {
  auto owned = std::make_shared<std::string>(std::move(message));
  Send(rank, kRequestTag, owned->data(), owned->size(),
       [owned, done = std::move(done)](const std::string& error) { done(error); });
}

void MpiWorld::ServeRequests(RequestHandler handler) {
  {
    std::lock_guard<std::mutex> lock(handler_mu_);
    handler_ = std::move(handler);
    serving_ = static_cast<bool>(handler_);
  }
  wake_.notify_all();
}

bool MpiWorld::TakeRequest() {
  std::lock_guard<std::mutex> lock(handler_mu_);
  if (!handler_) return false;
  int flag = 0;
  MPI_Message message;
  MPI_Status status;
  if (MPI_Improbe(MPI_ANY_SOURCE, kRequestTag, comm_, &flag, &message, &status) != MPI_SUCCESS || !flag) return false;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::string bytes(static_cast<size_t>(count), '\0');
  MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
  handler_(status.MPI_SOURCE, std::move(bytes));
  return true;
}

void MpiWorld::Post(Op op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_.push_back(std::move(op));
  }
  wake_.notify_one();
}

void MpiWorld::Start(Op& op) {
  auto t = std::make_shared<Transfer>();
  t->done = std::move(op.done);
  MPI_Request request = MPI_REQUEST_NULL;
  auto posted = [&](int rc) {
    if (rc != MPI_SUCCESS) {
      if (t->error.empty()) t->error = MpiError(rc);
      return;
    }
    requests_.push_back(request);
    owners_.push_back(t);
    ++t->pending;
  };
  if (op.kind == Op::kAllGather) {
    const int n = static_cast<int>(op.bytes);
    posted(MPI_Iallgather(op.send, n, MPI_BYTE, op.data, n, MPI_BYTE, comm_, &request));
  } else {
    auto* p = static_cast<char*>(op.data);
    size_t left = op.bytes;
    do {  // one message even for 0 bytes: the peer matches it
      const int n = static_cast<int>(std::min(left, kChunk));
      posted(op.kind == Op::kSend ? MPI_Isend(p, n, MPI_BYTE, op.rank, op.tag, comm_, &request)
                                  : MPI_Irecv(p, n, MPI_BYTE, op.rank, op.tag, comm_, &request));
      p += n;
      left -= static_cast<size_t>(n);
    } while (left > 0 && t->error.empty());
  }
  if (t->pending == 0) t->done(t->error);
}

void MpiWorld::Poll() {
  std::vector<int> indices(requests_.size());
  std::vector<MPI_Status> statuses(requests_.size());
  int count = 0;
  const int rc =
      MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &count, indices.data(), statuses.data());
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {  // MPI itself failed: so did every transfer
    for (auto& owner : owners_) {
      if (owner->error.empty()) owner->error = MpiError(rc);
      if (--owner->pending == 0) owner->done(owner->error);
    }
    requests_.clear();
    owners_.clear();
    return;
  }
  if (count == MPI_UNDEFINED || count == 0) return;
  std::vector<bool> finished(requests_.size(), false);
  for (int i = 0; i < count; ++i) {
    const int k = indices[i];
    finished[k] = true;
    Transfer& t = *owners_[k];
    if (rc == MPI_ERR_IN_STATUS && statuses[i].MPI_ERROR != MPI_SUCCESS && t.error.empty()) {
      t.error = MpiError(statuses[i].MPI_ERROR);
    }
    if (--t.pending == 0) t.done(t.error);
  }
  size_t w = 0;
  for (size_t r = 0; r < requests_.size(); ++r) {
    if (finished[r]) continue;
    requests_[w] = requests_[r];
    owners_[w] = std::move(owners_[r]);
    ++w;
  }
  requests_.resize(w);
  owners_.resize(w);
}

void MpiWorld::Loop() {
  int provided = 0, already = 0;
  MPI_Initialized(&already);
  owns_mpi_ = !already;
  if (already) {  // the program runs MPI itself (a benchmark, an embedding application)
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) {
      init_error_ = "MPI was initialized by the program at thread level " + std::to_string(provided) +
                    "; Rill's MPI thread then needs MPI_THREAD_MULTIPLE";
    }
  } else if (const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided); rc != MPI_SUCCESS) {
    init_error_ = "MPI_Init_thread failed: " + MpiError(rc);
  } else if (provided < MPI_THREAD_FUNNELED) {
    init_error_ = "MPI gives thread level " + std::to_string(provided) + ", below MPI_THREAD_FUNNELED";
  }
  if (init_error_.empty()) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    int* ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    if (found && ub) tag_ub_ = *ub;
    const char* ns = std::getenv("PMIX_NAMESPACE");
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    job_ = ns ? ns : "singleton " + std::string(host) + ":" + std::to_string(getpid());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
  }
  ready_.notify_all();
  if (!init_error_.empty()) return;

  constexpr int kSpinPolls = 4096;  // unproductive polls before sleeping between them
  int idle_polls = 0;
  std::chrono::steady_clock::time_point stopping{};
  while (true) {
    std::vector<Op> incoming;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const auto woken = [&] { return stop_ || !queued_.empty(); };
      if (requests_.empty() && !serving_) {
        wake_.wait(lock, [&] { return woken() || serving_; });
      } else if (requests_.empty() && idle_polls > kSpinPolls) {  // serving, nothing in flight
        wake_.wait_for(lock, kIdleSleep, woken);
      }
      incoming.swap(queued_);
      if (stop_ && abort_at_exit_) {
        lock.unlock();
        MPI_Abort(MPI_COMM_WORLD, 1);  // does not return
      }
      if (stop_ && incoming.empty()) {
        if (requests_.empty()) break;
        const auto now = std::chrono::steady_clock::now();
        if (stopping == std::chrono::steady_clock::time_point{}) stopping = now;
        // Transfers no peer finishes (a failed run): finalizing would wait for them forever.
        if (now - stopping > std::chrono::seconds(2)) return;
      }
    }
    for (Op& op : incoming) Start(op);
    bool progress = !incoming.empty();
    if (serving_) progress = TakeRequest() || progress;
    if (!requests_.empty()) {
      const size_t before = requests_.size();
      Poll();
      progress = progress || requests_.size() < before;
    }
    if (progress) {
      idle_polls = 0;
    } else if (++idle_polls > 64) {
      sched_yield();  // on an oversubscribed machine the peer may need this core
    }
  }
  if (owns_mpi_) {  // otherwise the program finalizes MPI, which frees comm_ too
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }
}

}  // namespace rill::dist
