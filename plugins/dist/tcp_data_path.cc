#include "tcp_data_path.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "client.h"
#include "tcp_connection.h"
#include "trace.h"
#include "wire.h"

namespace rill::dist {
namespace {

using Secret = std::array<uint8_t, 16>;

// Accepted connections still to present their hello, at most: more are closed at once.
constexpr size_t kMaxGreeting = 64;
// Offers handed out and not yet used, at most: the oldest go first.
constexpr size_t kMaxOffers = 1024;

void RandomBytes(void* into, size_t n) {
  auto* p = static_cast<char*>(into);
  while (n > 0) {
    const ssize_t got = getrandom(p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
    p += got;
    n -= static_cast<size_t>(got);
  }
}

// HOST of HOST:PORT, without an IPv6 address's brackets.
std::string HostOf(const std::string& endpoint) {
  std::string host = endpoint.substr(0, endpoint.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

struct AddrInfo {
  addrinfo* list = nullptr;
  AddrInfo(const std::string& host, const std::string& port, int flags) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = flags;
    const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &list);
    if (rc != 0) throw std::runtime_error("cannot resolve '" + host + "': " + gai_strerror(rc));
  }
  ~AddrInfo() { freeaddrinfo(list); }
};

void NoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// A connected socket to HOST:port, or throws; waits at most `deadline` for the connect.
int ConnectTo(const std::string& host, uint32_t port, std::chrono::milliseconds deadline) {
  const std::string where = host + ":" + std::to_string(port);
  AddrInfo addresses(host, std::to_string(port), 0);
  std::string error = "no address";
  for (addrinfo* a = addresses.list; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = poll(&p, 1, static_cast<int>(deadline.count()));
      int so_error = 0;
      socklen_t len = sizeof(so_error);
      if (rc == 0) {
        errno = ETIMEDOUT;
        rc = -1;
      } else if (rc > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) == 0 && so_error != 0) {
        errno = so_error;
        rc = -1;
      } else if (rc > 0) {
        rc = 0;
      }
    }
    if (rc == 0) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      NoDelay(fd);
      return fd;
    }
    error = std::strerror(errno);
    close(fd);
  }
  throw std::runtime_error("cannot connect to its data port " + where + " (" + error + ")");
}

// What a trainer presents for `offer`.
TcpHello HelloFor(const v1::DataPathOffer& offer) {
  TcpHello hello;
  hello.connection = offer.connection();
  std::memcpy(hello.secret.data(), offer.secret().data(), hello.secret.size());
  return hello;
}

// Every route a trainer process makes has its own tag, whichever connection it takes.
std::atomic<uint32_t> next_tag{1};

uint32_t NextTag() {
  uint32_t tag = next_tag.fetch_add(1, std::memory_order_relaxed);
  if (tag == 0) tag = next_tag.fetch_add(1, std::memory_order_relaxed);  // 0 is no tag
  return tag;
}

// What both sides do alike: a transfer goes to the connection `rank` names, or fails.
class TcpPath : public DataPath {
 public:
  std::string Name() const override { return "tcp"; }
  // Below 1 MiB the bytes in the message cost less than the hop beside it (docs/PERFORMANCE.md).
  size_t MinBytes() const override { return size_t{1} << 20; }
  void Send(int rank, int tag, const void* data, size_t bytes, Done done) override {
    done = TracedTransfer("tcp", "send to " + PeerName(rank), bytes, std::move(done));
    if (auto c = Find(rank)) return c->Send(static_cast<uint32_t>(tag), data, bytes, std::move(done));
    FailTransferLater(std::move(done), NoConnection(rank));
  }
  void Receive(int rank, int tag, void* data, size_t bytes, Done done) override {
    done = TracedTransfer("tcp", "receive from " + PeerName(rank), bytes, std::move(done));
    if (auto c = Find(rank)) return c->Receive(static_cast<uint32_t>(tag), data, bytes, std::move(done));
    FailTransferLater(std::move(done), NoConnection(rank));
  }
  void Discard(int rank, int tag) override {
    if (auto c = Find(rank)) c->Discard(static_cast<uint32_t>(tag));
  }

 protected:
  virtual std::shared_ptr<TcpConnection> Find(int rank) const = 0;
  virtual std::string NoConnection(int rank) const = 0;
};

class TrainerPath final : public TcpPath {
 public:
  explicit TrainerPath(TransportOptions options) : options_(std::move(options)) {}

  bool RouteTo(const std::string& endpoint, v1::OutOfBand* route) override {
    std::lock_guard<std::mutex> lock(mu_);
    Pserver& p = pservers_[endpoint];
    if (p.in_messages) return false;
    if (p.index >= 0 && !connections_[p.index]->open()) {
      connections_[p.index].reset();  // broken: its transfers failed already
      p.index = -1;
    }
    if (p.index < 0 && !Open(endpoint, &p)) return false;
    route->set_job(p.instance);
    route->set_rank(p.number);
    route->set_tag(static_cast<int32_t>(NextTag()));
    route->set_peer_rank(p.index);
    return true;
  }

  bool Reaches(const std::string& endpoint) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pservers_.find(endpoint);
    return it != pservers_.end() && it->second.index >= 0 && connections_[it->second.index]->open();
  }
  std::string Refuses(const v1::OutOfBand&) const override { return "this process is a trainer: it serves no routes"; }
  std::string PeerName(int rank) const override {
    std::shared_ptr<TcpConnection> c = Find(rank);
    return c ? c->peer() : "data connection " + std::to_string(rank);
  }

 private:
  std::shared_ptr<TcpConnection> Find(int rank) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return rank >= 0 && static_cast<size_t>(rank) < connections_.size() ? connections_[rank] : nullptr;
  }
  std::string NoConnection(int rank) const override {
    return "data connection " + std::to_string(rank) + " is closed (its pserver went away)";
  }

  struct Pserver {
    bool in_messages = false;  // it has no data path
    std::string instance;
    int32_t number = 0;  // the connection's number at the pserver
    int index = -1;      // into connections_
  };

  // Opens a connection to the pserver of `endpoint` (under mu_); false if it has no path.
  bool Open(const std::string& endpoint, Pserver* p) {
    std::vector<RpcCall> calls(1);
    RpcCall& call = calls[0];
    call.endpoint = endpoint;
    call.method = kOpenDataPath;
    call.subject = "(the TCP connection for tensor bytes)";
    call.request = EncodeMessage(v1::DataPathRequest());
    call.tolerated = {grpc::StatusCode::UNIMPLEMENTED};
    TrainerSession::Get().Call(calls, options_);
    if (!call.status.ok()) {
      p->in_messages = true;
      return false;
    }
    v1::DataPathOffer offer;
    try {
      DecodeMessage(call.response, &offer);
      if (offer.port() == 0 || offer.port() > 65535 || offer.secret().size() != sizeof(Secret)) {
        throw WireError("port " + std::to_string(offer.port()) + ", a secret of " +
                        std::to_string(offer.secret().size()) + " bytes");
      }
    } catch (const WireError& e) {
      throw std::runtime_error(AboutCall(call) + "a malformed offer: " + e.what());
    }
    int fd = -1;
    try {
      fd = ConnectTo(HostOf(endpoint), offer.port(), options_.deadline);
      PresentHello(fd, HelloFor(offer));
    } catch (const std::exception& e) {
      if (fd >= 0) close(fd);
      throw std::runtime_error("pserver " + endpoint + ": " + e.what());
    }
    p->instance = offer.instance();
    p->number = offer.connection();
    p->index = static_cast<int>(connections_.size());
    connections_.push_back(std::make_shared<TcpConnection>(fd, "pserver " + endpoint, options_.deadline));
    return true;
  }

  const TransportOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, Pserver> pservers_;
  // By index; a broken connection's place is emptied, and its pserver's next one gets a
  // new index, so a route made before the break never reaches the new connection.
  std::vector<std::shared_ptr<TcpConnection>> connections_;
};

class PserverPath final : public TcpPath {
 public:
  PserverPath(const std::string& endpoint, TransportOptions options) : options_(std::move(options)) {
    const std::string host = HostOf(endpoint);
    AddrInfo addresses(host, std::to_string(options_.data_port), AI_PASSIVE);
    std::string error = "no address";
    for (addrinfo* a = addresses.list; a != nullptr && listener_ < 0; a = a->ai_next) {
      const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      const int one = 1;  // a pserver restarted on its RILL_DATA_PORT is not held off by TIME_WAIT
      if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (fd >= 0 && bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) {
        listener_ = fd;
        break;
      }
      error = std::strerror(errno);
      if (fd >= 0) close(fd);
    }
    if (listener_ < 0) {
      throw std::runtime_error("cannot listen for data connections on '" + host + ":" +
                               std::to_string(options_.data_port) + "' (" + error + "; RILL_DATA_PORT)");
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    uint8_t id[8];
    RandomBytes(id, sizeof(id));
    static const char kHex[] = "0123456789abcdef";
    for (uint8_t b : id) instance_ += {kHex[b >> 4], kHex[b & 15]};
    if (pipe2(stop_, O_CLOEXEC) != 0) {
      close(listener_);
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~PserverPath() override {
    const char stop = 1;
    (void)!write(stop_[1], &stop, 1);
    acceptor_.join();
    std::map<int32_t, std::shared_ptr<TcpConnection>> connections;
    std::vector<std::shared_ptr<TcpConnection>> greeting;
    {
      std::lock_guard<std::mutex> lock(mu_);
      connections.swap(connections_);
      greeting.swap(greeting_);
    }
    // Destroyed here, outside mu_: their reader may be in Admit().
    for (auto& [number, c] : connections) c->Close("pserver " + instance_ + " stopped serving");
    for (auto& c : greeting) c->Close("pserver " + instance_ + " stopped serving");
    connections.clear();
    greeting.clear();
    close(listener_);
    close(stop_[0]);
    close(stop_[1]);
  }

  bool RouteTo(const std::string&, v1::OutOfBand*) override {
    throw std::logic_error("a pserver's data path routes nothing");
  }

  std::string Refuses(const v1::OutOfBand& route) const override {
    if (route.job() != instance_) {
      return "the request's bytes are routed to data path '" + route.job() + "', this pserver's is '" + instance_ +
             "' (a pserver that restarted, or another one)";
    }
    if (route.tag() == 0) return "the request's route has no tag";
    std::shared_ptr<TcpConnection> c = Find(route.rank());
    if (!c || !c->open()) return "the request's data connection " + std::to_string(route.rank()) + " is not open";
    return "";
  }

  grpc::Status Offer(v1::DataPathOffer* offer) override {
    Secret secret;
    RandomBytes(secret.data(), secret.size());
    std::lock_guard<std::mutex> lock(mu_);
    const int32_t number = next_number_++;
    offers_[number] = secret;
    if (offers_.size() > kMaxOffers) offers_.erase(offers_.begin());
    offer->set_instance(instance_);
    offer->set_port(port_);
    offer->set_connection(number);
    offer->set_secret(secret.data(), secret.size());
    return grpc::Status::OK;
  }

  std::string PeerName(int rank) const override {
    std::shared_ptr<TcpConnection> c = Find(rank);
    return "data connection " + std::to_string(rank) + (c ? " (" + c->peer() + ")" : "");
  }

 private:
  std::shared_ptr<TcpConnection> Find(int rank) const override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = connections_.find(rank);
    return it == connections_.end() ? nullptr : it->second;
  }
  std::string NoConnection(int rank) const override {
    return "data connection " + std::to_string(rank) + " is closed (its trainer went away)";
  }

  // On the connection's reader: serves it if it presents an offer handed out and unused.
  bool Admit(const TcpHello& hello, TcpConnection* connection) {
    std::lock_guard<std::mutex> lock(mu_);
    auto offer = offers_.find(hello.connection);
    if (offer == offers_.end()) return false;
    uint8_t differ = 0;  // compared in full: the time taken says nothing about the secret
    for (size_t i = 0; i < offer->second.size(); ++i) differ |= offer->second[i] ^ hello.secret[i];
    if (differ != 0) return false;
    offers_.erase(offer);
    for (auto it = greeting_.begin(); it != greeting_.end(); ++it) {
      if (it->get() != connection) continue;
      connections_[hello.connection] = std::move(*it);
      greeting_.erase(it);
      return true;
    }
    return false;
  }

  void AcceptLoop() {
    for (;;) {
      pollfd fds[2] = {{listener_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
      const int ready = poll(fds, 2, 1000);
      if (fds[1].revents != 0) return;
      Reap();
      if (ready <= 0 || (fds[0].revents & POLLIN) == 0) continue;
      sockaddr_storage from{};
      socklen_t len = sizeof(from);
      const int fd = accept4(listener_, reinterpret_cast<sockaddr*>(&from), &len, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      if (greeting_.size() >= kMaxGreeting) {
        close(fd);
        continue;
      }
      NoDelay(fd);
      char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
      getnameinfo(reinterpret_cast<sockaddr*>(&from), len, host, sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV);
      greeting_.push_back(
          std::make_shared<TcpConnection>(fd, std::string("trainer at ") + host + ":" + port, options_.deadline,
                                          [this](const TcpHello& hello, TcpConnection* c) { return Admit(hello, c); }));
    }
  }

  // Drops closed connections (their threads have ended or are ending), outside mu_.
  void Reap() {
    std::vector<std::shared_ptr<TcpConnection>> closed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = connections_.begin(); it != connections_.end();) {
        if (it->second->open()) {
          ++it;
          continue;
        }
        closed.push_back(std::move(it->second));
        it = connections_.erase(it);
      }
      for (auto it = greeting_.begin(); it != greeting_.end();) {
        if ((*it)->open()) {
          ++it;
          continue;
        }
        closed.push_back(std::move(*it));
        it = greeting_.erase(it);
      }
    }
  }

  const TransportOptions options_;
  int listener_ = -1;
  int stop_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::string instance_;
  std::thread acceptor_;

  mutable std::mutex mu_;
  int32_t next_number_ = 1;
  std::map<int32_t, Secret> offers_;
  std::map<int32_t, std::shared_ptr<TcpConnection>> connections_;  // admitted, by number
  std::vector<std::shared_ptr<TcpConnection>> greeting_;           // accepted, hello not yet checked
};

bool KeepsBytesInMessages(const TransportOptions& options) {
  return !options.tcp_data_path || !options.tls_ca_file.empty() || !options.tls_cert_file.empty();
}

}  // namespace

DataPath* TcpTrainerDataPath(const TransportOptions& options) {
  if (KeepsBytesInMessages(options)) return nullptr;
  static TrainerPath* path = new TrainerPath(options);  // outlives every op, as the TrainerSession does
  return path;
}

std::shared_ptr<DataPath> ListenTcpDataPath(const std::string& endpoint, const TransportOptions& options) {
  if (KeepsBytesInMessages(options)) return nullptr;
  return std::make_shared<PserverPath>(endpoint, options);
}

}  // namespace rill::dist
