// tcp_connection.h — one TCP connection of the TCP data path: tagged transfers both ways,
// each straight from and into the caller's memory.
//
// Contract:
//  - Send() queues a transfer; a writer thread writes it as one frame, a TcpFrameHeader
//    then the bytes, in the order Send() was called. (Both ends are one build: headers
//    are in host byte order.)
//  - Receive() posts memory for the frame with its tag. A reader thread reads each frame
//    straight into the memory posted for its tag. A frame that comes before its Receive()
//    waits for it (the connection reads nothing else meanwhile) until it is posted,
//    Discard()ed or `unclaimed_after` passes; then its bytes are read and dropped.
//  - A frame whose size is not the posted one fails that Receive() and is dropped; the
//    connection goes on.
//  - Every transfer's `done` runs exactly once, on the reader or writer thread (or, for a
//    connection already closed, on a thread of its own): "" once its bytes are written or
//    in place, else why not. Close(), the peer closing or an I/O error fails every
//    transfer still queued or posted, with `peer` in the reason.
//  - A connection accepted by a pserver first reads the trainer's hello and asks `admit`
//    whether to serve it; if not, it closes without reading more.
//
// Invariant (under mu_): a transfer is in sends_/receives_, or held by exactly one of the
// two threads, or done; whoever takes it out calls its `done`.
#ifndef RILL_DIST_PS_TCP_CONNECTION_H_
#define RILL_DIST_PS_TCP_CONNECTION_H_

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "data_path.h"

namespace rill::dist {

// What a trainer presents first on a new data connection: the number and secret of the
// pserver's offer (DataPathOffer).
struct TcpHello {
  static constexpr uint64_t kMagic = 0x31687444'6c6c6952;  // "RillDth1"
  uint64_t magic = kMagic;
  int32_t connection = 0;
  uint32_t reserved = 0;
  std::array<uint8_t, 16> secret{};
};

// What precedes each transfer's bytes on a connection.
struct TcpFrameHeader {
  static constexpr uint32_t kMagic = 0x52444631;  // "RDF1"
  uint32_t magic = kMagic;
  uint32_t tag = 0;
  uint64_t bytes = 0;
};

// Trainer: writes `hello` on `fd` (connected, not yet a TcpConnection) and waits for the
// pserver's yes; throws if it does not come in time.
void PresentHello(int fd, const TcpHello& hello);

// Runs `done(why)` on a thread of its own: for a transfer that fails before it started,
// since `done` never runs inside the call that started it.
void FailTransferLater(DataPath::Done done, std::string why);

class TcpConnection {
 public:
  // A pserver's check of a hello; true: serve this connection (and it was registered).
  using Admit = std::function<bool(const TcpHello& hello, TcpConnection* connection)>;

  // Takes `fd`, connected. `admit` null: the hello was exchanged already (trainer side).
  TcpConnection(int fd, std::string peer, std::chrono::milliseconds unclaimed_after, Admit admit = nullptr);
  ~TcpConnection();  // Close() and join the threads
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  void Send(uint32_t tag, const void* data, size_t bytes, DataPath::Done done);
  void Receive(uint32_t tag, void* data, size_t bytes, DataPath::Done done);
  void Discard(uint32_t tag);
  // Fails what is queued or posted with `why` and ends the threads' I/O.
  void Close(const std::string& why);

  bool open() const;
  const std::string& peer() const { return peer_; }

 private:
  struct Transfer {
    uint32_t tag = 0;
    char* data = nullptr;
    size_t bytes = 0;
    bool discard = false;  // a Discard(), or a frame nobody claimed: no `done`
    DataPath::Done done;
  };

  void ReadLoop();
  void WriteLoop();
  bool Greet();  // pserver: reads the hello, asks admit_, answers it
  // Reads `n` bytes into `into` (null: drops them); false on EOF or error.
  bool ReadAll(char* into, size_t n);
  std::string IoError(const char* what) const;

  const int fd_;
  const std::string peer_;
  const std::chrono::milliseconds unclaimed_after_;
  const Admit admit_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::string closed_;  // why, once closed
  std::deque<Transfer> sends_;
  std::map<uint32_t, Transfer> receives_;
  std::thread reader_, writer_;
};

}  // namespace rill::dist

#endif  // RILL_DIST_PS_TCP_CONNECTION_H_
