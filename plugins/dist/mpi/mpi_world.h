// mpi_world.h — this process's MPI: one thread that owns every MPI call.
//
// Contract:
//  - Get() starts the MPI thread on first use; that thread calls MPI_Init_thread
//    (MPI_THREAD_FUNNELED: only it ever calls MPI) and, when the process ends with no
//    transfer left, MPI_Finalize. A process that never uses the MPI ops never starts MPI.
//    If the program initialized MPI itself, it must have asked for MPI_THREAD_MULTIPLE,
//    and it finalizes MPI.
//  - Send/Receive post non-blocking transfers straight from / into the caller's memory
//    on a communicator of our own (a duplicate of MPI_COMM_WORLD: our tags never meet a
//    user's). `done` runs once on the MPI thread: "" on success, else the reason. Messages
//    over 1 GiB go as several, matched in order (MPI counts are ints).
//  - AllGather exchanges one fixed-size record per rank (every rank calls it once) and
//    gives up after a deadline, so a rank that never arrives is an error, not a hang.
//  - Requests: SendRequest puts a small message on tag kRequestTag (which NextTag never
//    gives); a process that ServeRequests() has the MPI thread probe for them and hand
//    each to its handler. While it serves, the thread polls even with no transfer active,
//    spinning (yielding) for a while after each activity, then in sleeps of kIdleSleep.
//
// Invariants (the thread's loop): queued_ is handed over under mu_; requests_[i] belongs
// to owners_[i], which completes when all its requests did. While requests are active the
// thread polls them (yielding the CPU between unproductive polls: MPI makes progress only
// inside its calls); with none it sleeps on wake_.
#ifndef RILL_DIST_MPI_MPI_WORLD_H_
#define RILL_DIST_MPI_MPI_WORLD_H_

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rill::dist {

class MpiWorld {
 public:
  using Done = std::function<void(const std::string& error)>;

  // Waits up to `deadline` for MPI_Init, which returns once every rank of the job started
  // MPI; throws past it, or if MPI cannot start.
  static MpiWorld& Get(std::chrono::milliseconds deadline = std::chrono::hours(24));
  // At exit, MPI_Abort (ending every rank of the job, which mpirun reports) instead of
  // MPI_Finalize, which waits for every rank: this process is ending on an error. A no-op
  // if MPI never started.
  static void AbortAtExit();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Names the job (PMIx namespace under mpirun), so requests from another job are refused.
  const std::string& job() const { return job_; }
  // A tag for one transfer, in [1, MPI_TAG_UB].
  int NextTag();

  static constexpr int kRequestTag = 0;
  static constexpr std::chrono::microseconds kIdleSleep{200};
  using RequestHandler = std::function<void(int rank, std::string message)>;

  void Send(int rank, int tag, const void* data, size_t bytes, Done done);
  void Receive(int rank, int tag, void* data, size_t bytes, Done done);
  // Every rank's record, by rank (each exactly `record.size()` bytes on every rank).
  std::vector<std::string> AllGather(const std::string& record, std::chrono::milliseconds deadline);
  // Sends `message` on kRequestTag; it is copied.
  void SendRequest(int rank, std::string message, Done done);
  // Requests from any rank go to `handler`, run on the MPI thread; null stops taking them
  // (returning once no call of the old handler runs).
  void ServeRequests(RequestHandler handler);

  ~MpiWorld();

 private:
  struct Op;
  struct Transfer;
  MpiWorld();
  void Loop();
  void Post(Op op);
  void Start(Op& op);
  void Poll();
  bool TakeRequest();  // one request to the handler, if one came

  std::thread thread_;
  int rank_ = -1, size_ = 0, tag_ub_ = 32767;
  bool owns_mpi_ = true;  // we initialized MPI, so we finalize it
  std::string job_, init_error_;
  std::atomic<int> next_tag_{0};
  MPI_Comm comm_ = MPI_COMM_NULL;

  std::mutex mu_;
  std::condition_variable wake_, ready_;
  bool started_ = false, stop_ = false;
  static std::atomic<bool> abort_at_exit_;
  std::vector<Op> queued_;
  std::atomic<bool> serving_{false};
  std::mutex handler_mu_;  // held while the handler runs
  RequestHandler handler_;

  // The MPI thread's own.
  std::vector<MPI_Request> requests_;
  std::vector<std::shared_ptr<Transfer>> owners_;
};

}  // namespace rill::dist

#endif  // RILL_DIST_MPI_MPI_WORLD_H_
