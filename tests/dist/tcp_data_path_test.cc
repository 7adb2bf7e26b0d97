// dist_grpc's TCP data path: the pserver's path and the trainer's, served for real on
// loopback beside a real ParameterServer: bytes both ways, offers that do not hold, routes
// that do not reach, a refused gradient's bytes, the token, TLS. (One connection alone:
// tcp_connection_test.cc.)
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <future>

#include "client.h"
#include "pserver.h"
#include "rill/abi.h"
#include "test_util.h"
#include "tcp_connection.h"  // TcpHello
#include "tcp_data_path.h"
#include "transfer_util.h"
#include "wire.h"

namespace rill::dist {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// One parameter w (float32 [n]) with w -= 0.5 * grad, served with a TCP data path.
class TcpPserver {
 public:
  TcpPserver(size_t n, TransportOptions options = {})
      : options_(options),
        w_(Iota(n, 1)),
        grad_(n),
        path_(ListenTcpDataPath("127.0.0.1:0", options)),
        server_("127.0.0.1:0", 1, {ParamSpec{"w", "w@GRAD", RILL_FP32, {static_cast<int64_t>(n)}}}, options,
                path_.get()) {
    server_.Start({Bytes()});
    serving_ = std::async(std::launch::async, [this] {
      PserverHooks hooks;
      hooks.gradient = [this](size_t) { return static_cast<void*>(grad_.data()); };
      hooks.optimize = [this] {
        for (size_t i = 0; i < w_.size(); ++i) w_[i] -= 0.5f * grad_[i];
      };
      hooks.parameters = [this] { return std::vector<TensorBytes>{Bytes()}; };
      server_.Serve(hooks);
    });
  }
  // Trainer 0 completes, so Serve() returns.
  ~TcpPserver() {
    std::vector<RpcCall> complete(1);
    complete[0].endpoint = endpoint();
    complete[0].method = kComplete;
    complete[0].request = EncodeMessage(v1::CompleteRequest());
    TrainerSession::Get().Call(complete, options_);
    EXPECT_EQ(serving_.wait_for(seconds(10)), std::future_status::ready);
  }
  const std::string& endpoint() const { return server_.endpoint(); }

 private:
  TensorBytes Bytes() {
    return TensorBytes{RILL_FP32, {static_cast<int64_t>(w_.size())}, {}, w_.data(), w_.size() * 4};
  }
  const TransportOptions options_;
  std::vector<float> w_, grad_;
  std::shared_ptr<DataPath> path_;
  ParameterServer server_;
  std::future<void> serving_;
};

RpcCall Rpc(const std::string& endpoint, const char* method, grpc::ByteBuffer request) {
  RpcCall c;
  c.endpoint = endpoint;
  c.method = method;
  c.subject = "test";
  c.request = std::move(request);
  c.tolerated = {grpc::StatusCode::INVALID_ARGUMENT};  // the tests look at refusals themselves
  return c;
}

grpc::Status CallOne(RpcCall& call, const TransportOptions& options = {}) {
  std::vector<RpcCall> calls{std::move(call)};
  TrainerSession::Get().Call(calls, options);
  call = std::move(calls[0]);
  return call.status;
}

grpc::ByteBuffer GradMessage(std::vector<float>& g, int64_t iteration, const v1::OutOfBand* route, SliceLease& lease,
                             int64_t dims = -1) {
  return EncodeVariable(
      "w@GRAD", 0, iteration,
      TensorBytes{RILL_FP32, {dims < 0 ? static_cast<int64_t>(g.size()) : dims}, {}, g.data(), g.size() * 4}, lease,
      route);
}

// A gradient pushed with its bytes beside the call; the call's status and the transfer's.
std::pair<grpc::Status, std::string> PushGradient(DataPath* path, const std::string& endpoint, std::vector<float>& g,
                                                  int64_t iteration, int64_t dims = -1) {
  v1::OutOfBand route;
  EXPECT_TRUE(path->RouteTo(endpoint, &route));
  SliceLease lease;
  Outcome sent;
  path->Send(route.peer_rank(), route.tag(), g.data(), g.size() * 4, sent.Done());
  RpcCall call = Rpc(endpoint, kSendVariable, GradMessage(g, iteration, &route, lease, dims));
  const grpc::Status status = CallOne(call);
  return {status, sent.Get()};
}

TEST(DistTcpDataPath, GradientsAndParametersTravelBesideTheCallsStraightIntoTheTensors) {
  const size_t n = 1 << 18;  // 1 MiB: the path's MinBytes(), so the pserver answers beside the call
  TcpPserver ps(n);
  DataPath* path = TcpTrainerDataPath(TransportOptions{});
  ASSERT_NE(path, nullptr);
  std::vector<float> g(n, 2.0f);
  const auto [status, sent] = PushGradient(path, ps.endpoint(), g, 1);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(sent, "");
  v1::BarrierRequest barrier;
  barrier.set_iteration(1);
  RpcCall b = Rpc(ps.endpoint(), kBarrier, EncodeMessage(barrier));
  ASSERT_TRUE(CallOne(b).ok()) << b.status.error_message();

  v1::GetRequest get;
  get.set_name("w");
  get.set_iteration(1);
  ASSERT_TRUE(path->RouteTo(ps.endpoint(), get.mutable_out_of_band()));
  RpcCall g1 = Rpc(ps.endpoint(), kGetVariable, EncodeMessage(get));
  ASSERT_TRUE(CallOne(g1).ok()) << g1.status.error_message();
  std::vector<float> w(n, -7);
  bool beside = false;
  DecodeVariable(g1.response, [&](const v1::VariableHeader& h) {
    beside = h.has_out_of_band();
    return static_cast<void*>(w.data());
  });
  ASSERT_TRUE(beside) << "the pserver sent the parameter in the message";
  EXPECT_EQ(w, std::vector<float>(n, -7)) << "bytes in a message that should have none";
  Outcome got;
  path->Receive(get.out_of_band().peer_rank(), get.out_of_band().tag(), w.data(), n * 4, got.Done());
  EXPECT_EQ(got.Get(), "");
  std::vector<float> expected = Iota(n, 1);
  for (float& v : expected) v -= 1.0f;  // w - 0.5 * 2
  EXPECT_EQ(w, expected);
}

TEST(DistTcpDataPath, ARefusedGradientsBytesAreDroppedAndTheNextGradientArrives) {
  TcpPserver ps(1 << 16);
  DataPath* path = TcpTrainerDataPath(TransportOptions{});
  std::vector<float> wrong(1 << 16, 1.0f), right(1 << 16, 2.0f);
  // Dims other than the parameter's: refused after the route was checked, so the bytes
  // already on their way must be taken off the connection, not wait there for the
  // deadline (120 s) and hold back the next gradient behind them.
  const auto [refused, refused_send] = PushGradient(path, ps.endpoint(), wrong, 1, 1 << 15);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refused_send, "");
  const auto [status, sent] = PushGradient(path, ps.endpoint(), right, 1);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(sent, "");
}

TEST(DistTcpDataPath, RoutesThatDoNotReachThisPserverAreRefusedAndItGoesOnServing) {
  TcpPserver ps(1 << 16);
  DataPath* path = TcpTrainerDataPath(TransportOptions{});
  std::vector<float> g(1 << 16, 1.0f);
  v1::OutOfBand route;
  ASSERT_TRUE(path->RouteTo(ps.endpoint(), &route));
  SliceLease lease;
  v1::OutOfBand other_path = route, no_connection = route;
  other_path.set_job("0123456789abcdef");
  no_connection.set_rank(999);
  RpcCall a = Rpc(ps.endpoint(), kSendVariable, GradMessage(g, 1, &other_path, lease));
  EXPECT_EQ(CallOne(a).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(a.status.error_message().find("routed to data path '0123456789abcdef'"), std::string::npos)
      << a.status.error_message();
  RpcCall b = Rpc(ps.endpoint(), kSendVariable, GradMessage(g, 1, &no_connection, lease));
  EXPECT_EQ(CallOne(b).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(b.status.error_message().find("data connection 999 is not open"), std::string::npos)
      << b.status.error_message();
  const auto [status, sent] = PushGradient(path, ps.endpoint(), g, 1);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(sent, "");
}

// A data connection opened by hand: an offer asked for over gRPC, the hello written raw.
class RawDataConnection {
 public:
  explicit RawDataConnection(const std::string& endpoint) {
    RpcCall open = Rpc(endpoint, kOpenDataPath, EncodeMessage(v1::DataPathRequest()));
    EXPECT_TRUE(CallOne(open).ok()) << open.status.error_message();
    DecodeMessage(open.response, &offer);
    EXPECT_EQ(offer.secret().size(), 16u);
  }
  ~RawDataConnection() { Close(); }
  // Connects and presents `number` and `secret`; whether the pserver said yes.
  bool Present(int32_t number, const std::string& secret) {
    Close();
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(offer.port()));
    EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    TcpHello hello;
    hello.connection = number;
    std::memcpy(hello.secret.data(), secret.data(), 16);
    Write(&hello, sizeof(hello));
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char answer = 0;
    return recv(fd_, &answer, 1, 0) == 1 && answer == 1;
  }
  void Write(const void* data, size_t n) { EXPECT_EQ(send(fd_, data, n, MSG_NOSIGNAL), static_cast<ssize_t>(n)); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  v1::DataPathOffer offer;

 private:
  int fd_ = -1;
};

// A connection to the data port that does not present an offer handed out and unused is
// closed unread; the offer's rightful owner still gets in.
TEST(DistTcpDataPath, ADataConnectionWithoutAValidOfferIsClosed) {
  TcpPserver ps(4);
  RawDataConnection raw(ps.endpoint());
  std::string wrong = raw.offer.secret();
  wrong[3] ^= 1;
  EXPECT_FALSE(raw.Present(raw.offer.connection(), wrong));
  EXPECT_FALSE(raw.Present(raw.offer.connection() + 1, raw.offer.secret()));
  EXPECT_TRUE(raw.Present(raw.offer.connection(), raw.offer.secret()));
  EXPECT_FALSE(raw.Present(raw.offer.connection(), raw.offer.secret())) << "an offer is good once";
}

// A trainer that dies halfway through a gradient's bytes: its call is answered with the
// broken connection, the slot is free again, and the pserver goes on serving.
TEST(DistTcpDataPath, ATrainerGoneMidTransferFailsThatGradientOnly) {
  const size_t n = 1 << 16;
  TcpPserver ps(n);
  RawDataConnection raw(ps.endpoint());
  ASSERT_TRUE(raw.Present(raw.offer.connection(), raw.offer.secret()));
  v1::OutOfBand route;
  route.set_job(raw.offer.instance());
  route.set_rank(raw.offer.connection());
  route.set_tag(1);
  std::vector<float> g(n, 1.0f);
  SliceLease lease;
  RpcCall call = Rpc(ps.endpoint(), kSendVariable, GradMessage(g, 1, &route, lease));
  call.tolerated = {grpc::StatusCode::UNAVAILABLE};
  auto answered = std::async(std::launch::async, [&] { return CallOne(call); });
  TcpFrameHeader frame;
  frame.tag = 1;
  frame.bytes = n * 4;
  raw.Write(&frame, sizeof(frame));
  raw.Write(g.data(), n * 2);  // half
  raw.Close();
  ASSERT_EQ(answered.wait_for(seconds(10)), std::future_status::ready);
  const grpc::Status status = answered.get();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find("receiving 'w@GRAD' from data connection"), std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find("broke"), std::string::npos) << status.error_message();
  const auto [again, sent] = PushGradient(TcpTrainerDataPath(TransportOptions{}), ps.endpoint(), g, 1);
  EXPECT_TRUE(again.ok()) << again.error_message();
  EXPECT_EQ(sent, "");
}

// RILL_DATA_PORT names the port; one in use is a clear error.
TEST(DistTcpDataPath, RillDataPortNamesThePortItListensOn) {
  setenv("RILL_DATA_PORT", std::to_string(test::FreeLoopbackPort()).c_str(), 1);
  const TransportOptions options = TransportOptions::Resolve(0);
  unsetenv("RILL_DATA_PORT");
  ASSERT_NE(options.data_port, 0);
  TcpPserver ps(4, options);
  RawDataConnection raw(ps.endpoint());
  EXPECT_EQ(raw.offer.port(), options.data_port);
  try {
    ListenTcpDataPath("127.0.0.1:0", options);
    ADD_FAILURE() << "a second path took port " << options.data_port;
  } catch (const std::exception& e) {
    EXPECT_NE(
        std::string(e.what()).find("cannot listen for data connections on '127.0.0.1:" +
                                   std::to_string(options.data_port) + "' (Address already in use; RILL_DATA_PORT)"),
        std::string::npos)
        << e.what();
  }
  setenv("RILL_DATA_PORT", "70000", 1);
  EXPECT_THROW(TransportOptions::Resolve(0), std::runtime_error);
  unsetenv("RILL_DATA_PORT");
}

TEST(DistTcpDataPath, OpeningItNeedsTheToken) {
  TransportOptions with_token;
  with_token.token = "s3cret";
  TcpPserver ps(4, with_token);
  RpcCall open = Rpc(ps.endpoint(), kOpenDataPath, EncodeMessage(v1::DataPathRequest()));
  open.tolerated = {grpc::StatusCode::UNAUTHENTICATED};
  EXPECT_EQ(CallOne(open).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  RpcCall with = Rpc(ps.endpoint(), kOpenDataPath, EncodeMessage(v1::DataPathRequest()));
  EXPECT_TRUE(CallOne(with, with_token).ok()) << with.status.error_message();
}

TEST(DistTcpDataPath, WithTlsOrRillDataPathMessageTheBytesStayInTheMessages) {
  TransportOptions tls_client, tls_server, message;
  tls_client.tls_ca_file = "ca.pem";
  tls_server.tls_cert_file = "cert.pem";
  tls_server.tls_key_file = "key.pem";
  message.tcp_data_path = false;
  for (const TransportOptions* o : {&tls_client, &tls_server, &message}) {
    EXPECT_EQ(TcpTrainerDataPath(*o), nullptr);
    EXPECT_EQ(ListenTcpDataPath("127.0.0.1:0", *o), nullptr);
  }
  setenv("RILL_DATA_PATH", "message", 1);
  EXPECT_FALSE(TransportOptions::Resolve(0).tcp_data_path);
  setenv("RILL_DATA_PATH", "udp", 1);
  try {
    TransportOptions::Resolve(0);
    ADD_FAILURE() << "RILL_DATA_PATH=udp was taken";
  } catch (const std::exception& e) {
    EXPECT_STREQ(e.what(), "RILL_DATA_PATH='udp': expected tcp or message");
  }
  unsetenv("RILL_DATA_PATH");
  EXPECT_TRUE(TransportOptions::Resolve(0).tcp_data_path);
}

// A pserver without a data path (dist_grpc under RILL_DATA_PATH=message, or an older
// one) answers OpenDataPath UNIMPLEMENTED: a trainer's route to it says "in the messages".
TEST(DistTcpDataPath, ATrainerSendsInTheMessagesToAPserverWithoutAPath) {
  ParameterServer plain("127.0.0.1:0", 1, {ParamSpec{"w", "w@GRAD", RILL_FP32, {4}}}, TransportOptions{});
  std::vector<float> w(4, 1.0f);
  plain.Start({TensorBytes{RILL_FP32, {4}, {}, w.data(), 16}});
  v1::OutOfBand route;
  EXPECT_FALSE(TcpTrainerDataPath(TransportOptions{})->RouteTo(plain.endpoint(), &route));
}

}  // namespace
}  // namespace rill::dist
