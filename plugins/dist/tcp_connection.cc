#include "tcp_connection.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace rill::dist {
namespace {

// How long either side of a new connection waits for the other's part of the hello.
constexpr std::chrono::seconds kHelloTimeout{5};

void SetReceiveTimeout(int fd, std::chrono::seconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count());
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

// Writes every byte of `iov`; false on error (errno says which).
bool WriteAll(int fd, iovec* iov, int count) {
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    const ssize_t put = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    size_t left = static_cast<size_t>(put);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

}  // namespace

void PresentHello(int fd, const TcpHello& hello) {
  iovec iov{const_cast<TcpHello*>(&hello), sizeof(hello)};
  if (!WriteAll(fd, &iov, 1)) {
    throw std::runtime_error(std::string("cannot present the offer on its data port (") + std::strerror(errno) + ")");
  }
  SetReceiveTimeout(fd, kHelloTimeout);
  char yes = 0;
  if (recv(fd, &yes, 1, MSG_WAITALL) != 1 || yes != 1) {
    throw std::runtime_error("its data port refused this trainer's connection (a stale offer, or another server)");
  }
  SetReceiveTimeout(fd, std::chrono::seconds(0));
}

void FailTransferLater(DataPath::Done done, std::string why) {
  std::thread([done = std::move(done), why = std::move(why)] { done(why); }).detach();
}

TcpConnection::TcpConnection(int fd, std::string peer, std::chrono::milliseconds unclaimed_after, Admit admit)
    : fd_(fd), peer_(std::move(peer)), unclaimed_after_(unclaimed_after), admit_(std::move(admit)) {
  reader_ = std::thread([this] { ReadLoop(); });
  writer_ = std::thread([this] { WriteLoop(); });
}

TcpConnection::~TcpConnection() {
  Close("the data connection with " + peer_ + " was closed by this process");
  for (std::thread* t : {&reader_, &writer_}) {
    if (t->get_id() == std::this_thread::get_id()) {
      t->detach();  // the last owner let go from a transfer's callback: the thread ends by itself
    } else if (t->joinable()) {
      t->join();
    }
  }
  close(fd_);
}

bool TcpConnection::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_.empty();
}

void TcpConnection::Send(uint32_t tag, const void* data, size_t bytes, DataPath::Done done) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!closed_.empty()) {
    lock.unlock();
    return FailTransferLater(std::move(done), closed_);
  }
  sends_.push_back(Transfer{tag, static_cast<char*>(const_cast<void*>(data)), bytes, false, std::move(done)});
  changed_.notify_all();
}

void TcpConnection::Receive(uint32_t tag, void* data, size_t bytes, DataPath::Done done) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!closed_.empty()) {
    lock.unlock();
    return FailTransferLater(std::move(done), closed_);
  }
  if (receives_.count(tag) != 0) {  // a route is used once: a second Receive of one tag is the caller's bug
    lock.unlock();
    return FailTransferLater(std::move(done),
                             "transfer " + std::to_string(tag) + " from " + peer_ + " is received already");
  }
  receives_.emplace(tag, Transfer{tag, static_cast<char*>(data), bytes, false, std::move(done)});
  changed_.notify_all();
}

void TcpConnection::Discard(uint32_t tag) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_.empty()) return;
  receives_.try_emplace(tag, Transfer{tag, nullptr, 0, true, nullptr});
  changed_.notify_all();
}

void TcpConnection::Close(const std::string& why) {
  std::deque<Transfer> sends;
  std::map<uint32_t, Transfer> receives;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closed_.empty()) return;
    closed_ = why.empty() ? "closed" : why;
    sends.swap(sends_);
    receives.swap(receives_);
    changed_.notify_all();
  }
  shutdown(fd_, SHUT_RDWR);  // wakes a thread blocked in I/O
  for (auto& t : sends) t.done(why);
  for (auto& [tag, t] : receives) {
    if (t.done) t.done(why);
  }
}

std::string TcpConnection::IoError(const char* what) const {
  return "the data connection with " + peer_ + " broke: " + what +
         (errno ? std::string(" (") + std::strerror(errno) + ")" : "");
}

bool TcpConnection::ReadAll(char* into, size_t n) {
  std::vector<char> scratch(into == nullptr ? std::min<size_t>(n, size_t{1} << 16) : 0);
  while (n > 0) {
    char* at = into != nullptr ? into : scratch.data();
    const size_t want = into != nullptr ? n : std::min(n, scratch.size());
    const ssize_t got = recv(fd_, at, want, MSG_WAITALL);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (got == 0) errno = 0;
      return false;
    }
    n -= static_cast<size_t>(got);
    if (into != nullptr) into += got;
  }
  return true;
}

bool TcpConnection::Greet() {
  SetReceiveTimeout(fd_, kHelloTimeout);
  TcpHello hello;
  if (!ReadAll(reinterpret_cast<char*>(&hello), sizeof(hello)) || hello.magic != TcpHello::kMagic ||
      !admit_(hello, this)) {
    return false;
  }
  SetReceiveTimeout(fd_, std::chrono::seconds(0));
  char accepted = 1;
  iovec iov{&accepted, 1};
  return WriteAll(fd_, &iov, 1);
}

void TcpConnection::ReadLoop() {
  if (admit_ && !Greet()) {
    Close("refused a data connection from " + peer_ + ": it did not present a valid offer");
    return;
  }
  for (;;) {
    TcpFrameHeader h;
    if (!ReadAll(reinterpret_cast<char*>(&h), sizeof(h))) return Close(IoError("it closed"));
    if (h.magic != TcpFrameHeader::kMagic)
      return Close("the data connection with " + peer_ + " carried a malformed frame");
    Transfer t;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const bool claimed =
          changed_.wait_for(lock, unclaimed_after_, [&] { return !closed_.empty() || receives_.count(h.tag) != 0; });
      if (!closed_.empty()) return;
      if (claimed) {
        auto it = receives_.find(h.tag);
        t = std::move(it->second);
        receives_.erase(it);
      } else {
        t.discard = true;  // nobody took it in time: its header was refused or its taker failed
      }
    }
    if (t.discard || t.bytes != h.bytes) {
      const bool read = ReadAll(nullptr, h.bytes);
      if (!t.discard) {
        t.done(peer_ + " sent " + std::to_string(h.bytes) + " bytes for transfer " + std::to_string(h.tag) + ", " +
               std::to_string(t.bytes) + " were expected");
      }
      if (!read) return Close(IoError("reading a frame"));
      continue;
    }
    if (!ReadAll(t.data, h.bytes)) {
      const std::string why = IoError("in the middle of a transfer");
      t.done(why);
      return Close(why);
    }
    t.done("");
  }
}

void TcpConnection::WriteLoop() {
  for (;;) {
    Transfer t;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [&] { return !closed_.empty() || !sends_.empty(); });
      if (!closed_.empty()) return;
      t = std::move(sends_.front());
      sends_.pop_front();
    }
    TcpFrameHeader h;
    h.tag = t.tag;
    h.bytes = t.bytes;
    iovec iov[2] = {{&h, sizeof(h)}, {t.data, t.bytes}};
    if (!WriteAll(fd_, iov, t.bytes > 0 ? 2 : 1)) {
      const std::string why = IoError("writing a frame");
      t.done(why);
      return Close(why);
    }
    t.done("");
  }
}

}  // namespace rill::dist
