// The gRPC transport against its peers, in one run, on loopback:
//   BM_Send_Rill/B      Rill's send as dist_grpc's send op makes it: from 1 MiB up, the
//                       header in a SendVariable call and the bytes beside it over the TCP
//                       data path, received straight into a destination tensor, the call
//                       answered once they are in; below, as BM_Send_RillInMessage
//   BM_Send_RillInMessage/B  the path under TLS or RILL_DATA_PATH=message: the header
//                       plus a slice over the tensor's memory in one message; the
//                       receiver checks it and keeps the bytes in gRPC's buffers, as a
//                       pserver does
//   BM_Send_Protobuf/B  the same service through protobuf's generated code: the tensor
//                       copied into VariableMessage.data, serialized, parsed into a
//                       std::string, copied into the destination
//   BM_Send_RawTcp/B    the limit: the same bytes over one TCP connection, read into the
//                       destination
// One iteration sends B bytes and waits for the acknowledgement; throughput is B / time.
//   BM_PserverStep/B    one whole sync iteration of one trainer against a real
//                       ParameterServer (with its TCP data path) in this process, as the
//                       send op makes it: a gradient of B bytes, the barrier and the pull
//                       of the parameter of B bytes, in one Step call (from 1 MiB the
//                       gradient's bytes go by the data path first, and the parameter's
//                       come back by it).
// The four BM_Send_* receiving ends run in a second process of this binary
// (`--serve-sinks`), as a pserver runs apart from its trainers: in one process, gRPC's
// threads would copy both the client's writes and the server's reads, which no
// deployment does. bench/dist_compare.py runs it and prints the ratios.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/server_builder.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <thread>

#include "client.h"
#include "core/cli/malloc_tuning.h"
#include "parameter_server.grpc.pb.h"
#include "pserver.h"
#include "rill/abi.h"
#include "tcp_data_path.h"
#include "wire.h"

namespace rill::dist {
namespace {

// glibc's malloc as `rill run` sets it (freed memory kept: a transfer's buffers are not
// faulted in afresh for every message), so the transport is measured as it runs there.
const bool kMallocTunedAsRill = [] {
  core::ApplyMallocTuning(core::MallocTuning::kTuned);
  return true;
}();

constexpr size_t kMaxBytes = size_t{256} << 20;

std::vector<char>& Destination() {
  static std::vector<char> dst(kMaxBytes);
  return dst;
}

// These figures are of a training run's steady state: it sends the same sizes every
// iteration. A size's first messages fault fresh receive memory in (15-18 us a page on
// these VMs): gRPC's receive buffers come from the malloc arena of whichever of its
// threads reads, so 64 MiB needs ~25 messages to get there. Each peer sends a size
// kWarmUpMessages times (or for kWarmUpTime) the first time it sends it in this process.
constexpr int kWarmUpMessages = 32;
constexpr auto kWarmUpTime = std::chrono::seconds(5);

template <class F> void WarmUp(const char* peer, size_t bytes, F&& send) {
  static std::set<std::pair<std::string, size_t>> warm;
  if (!warm.insert({peer, bytes}).second) {
    send();  // connected (or reconnected) before timing
    return;
  }
  const auto until = std::chrono::steady_clock::now() + kWarmUpTime;
  for (int i = 0; i < kWarmUpMessages && std::chrono::steady_clock::now() < until; ++i) send();
}

std::unique_ptr<grpc::Server> Serve(grpc::Service* service, std::string* endpoint) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  builder.RegisterService(service);
  auto server = builder.BuildAndStart();
  *endpoint = "127.0.0.1:" + std::to_string(port);
  return server;
}

// Rill's receiving side, as ParameterServer::OnSend does it. Bytes routed by the data path
// go straight into a destination tensor, and the call is answered once they are in; bytes
// in the message stay where gRPC received them (a pserver keeps them there and reads them
// once, when it averages the iteration: BM_PserverStep times that).
class RillSink final : public v1::ParameterServer::WithRawCallbackMethod_SendVariable<
                           v1::ParameterServer::WithRawCallbackMethod_OpenDataPath<v1::ParameterServer::Service>> {
 public:
  explicit RillSink(DataPath* path) : path_(path) {}
  grpc::ServerUnaryReactor* SendVariable(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override {
    auto* reactor = ctx->DefaultReactor();
    ReceivedBytes data;
    const v1::VariableHeader h = ParseVariable(*request, &data);
    *response = EncodeMessage(v1::Reply());
    if (!h.has_out_of_band()) {
      reactor->Finish(grpc::Status::OK);
      return reactor;
    }
    if (const std::string why = path_->Refuses(h.out_of_band()); !why.empty()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why));
      return reactor;
    }
    path_->Receive(
        h.out_of_band().rank(), h.out_of_band().tag(), Destination().data(), TensorByteSize(h),
        [reactor](const std::string& error) {
          reactor->Finish(error.empty() ? grpc::Status::OK : grpc::Status(grpc::StatusCode::UNAVAILABLE, error));
        });
    return reactor;
  }
  grpc::ServerUnaryReactor* OpenDataPath(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer*,
                                         grpc::ByteBuffer* response) override {
    v1::DataPathOffer offer;
    const grpc::Status status = path_->Offer(&offer);
    *response = EncodeMessage(offer);
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }

 private:
  DataPath* const path_;
};

// The generated-code peer: protobuf owns the bytes on both sides.
class ProtobufSink final : public v1::ParameterServer::Service {
 public:
  grpc::Status SendVariable(grpc::ServerContext*, const v1::VariableMessage* request, v1::Reply*) override {
    std::memcpy(Destination().data(), request->data().data(), request->data().size());
    return grpc::Status::OK;
  }
};

void ReadFully(int fd, void* dst, size_t n) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = read(fd, p, n);
    if (got <= 0) throw std::runtime_error("raw tcp: read failed");
    p += got;
    n -= static_cast<size_t>(got);
  }
}

void WriteFully(int fd, const void* src, size_t n) {
  auto* p = static_cast<const char*>(src);
  while (n > 0) {
    const ssize_t put = write(fd, p, n);
    if (put <= 0) throw std::runtime_error("raw tcp: write failed");
    p += put;
    n -= static_cast<size_t>(put);
  }
}

// 127.0.0.1:port (0: any port, when binding).
sockaddr_in Loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

// The raw TCP peer's receiving end: each connection reads [n][n bytes] into the
// destination and acknowledges with one byte, until n is 0.
void ServeTcp(int listener) {
  for (;;) {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) return;
    std::thread([fd] {
      uint64_t n = 0;
      const char ack = 1;
      try {
        while (true) {
          ReadFully(fd, &n, sizeof(n));
          if (n == 0 || n > kMaxBytes) break;
          ReadFully(fd, Destination().data(), n);
          WriteFully(fd, &ack, 1);
        }
      } catch (const std::exception&) {}
      close(fd);
    }).detach();
  }
}

// `--serve-sinks`: the receiving ends of every peer, in this process until its stdin
// closes. Prints one line: the two gRPC endpoints and the raw TCP port.
int ServeSinks() {
  const std::shared_ptr<DataPath> path = ListenTcpDataPath("127.0.0.1:0", TransportOptions{});
  RillSink rill(path.get());
  ProtobufSink protobuf;
  std::string rill_at, protobuf_at;
  auto s1 = Serve(&rill, &rill_at);
  auto s3 = Serve(&protobuf, &protobuf_at);
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listener, 4) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("rill_bench_dist --serve-sinks: raw tcp listener");
    return 1;
  }
  std::thread(ServeTcp, listener).detach();
  std::printf("%s %s %u\n", rill_at.c_str(), protobuf_at.c_str(), ntohs(addr.sin_port));
  std::fflush(stdout);
  char c;
  while (read(STDIN_FILENO, &c, 1) > 0) {}
  std::_Exit(0);  // the serving threads are still blocked in accept and reads
}

struct Sinks {
  std::string rill, protobuf;
  uint16_t tcp_port = 0;
};

// The sink process, started on first use; it ends when this process does (its stdin is
// the write end of a pipe only we hold).
const Sinks& RemoteSinks() {
  static const Sinks sinks = [] {
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
    char exe[] = "/proc/self/exe";
    char flag[] = "--serve-sinks";
    char* argv[] = {exe, flag, nullptr};
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, exe, &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(to_child[0]);
    close(from_child[1]);
    if (rc != 0) throw std::runtime_error("cannot start the sink process: " + std::string(std::strerror(rc)));
    std::string line;
    char c;
    while (read(from_child[0], &c, 1) == 1 && c != '\n') line += c;
    close(from_child[0]);
    char rill[128], protobuf[128];
    unsigned port = 0;
    if (std::sscanf(line.c_str(), "%127s %127s %u", rill, protobuf, &port) != 3) {
      throw std::runtime_error("the sink process did not start: '" + line + "'");
    }
    return Sinks{rill, protobuf, static_cast<uint16_t>(port)};
  }();
  return sinks;
}

std::vector<float>& Tensor(size_t bytes) {
  static std::vector<float> t;
  if (t.size() * sizeof(float) < bytes) t.assign(bytes / sizeof(float), 1.5f);
  return t;
}

void SetBytes(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void Await(TransferBatch& transfers) {
  std::string error;
  if (!transfers.Wait(std::chrono::seconds(60), &error) || !error.empty()) {
    throw std::runtime_error("a data path transfer failed: " + error);
  }
}

// Sends a tensor of B bytes as the send op does: with `path`, from its MinBytes() up,
// its bytes beside the call.
void SendRill(benchmark::State& state, const char* peer, DataPath* path) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const std::string& endpoint = RemoteSinks().rill;
  TrainerSession& session = TrainerSession::Get();
  TransportOptions options;
  TensorBytes t{RILL_FP32, {static_cast<int64_t>(bytes / 4)}, {}, Tensor(bytes).data(), bytes};
  auto send = [&] {
    SliceLease lease;
    TransferBatch transfers;
    std::vector<RpcCall> calls(1);
    calls[0].endpoint = endpoint;
    calls[0].method = kSendVariable;
    v1::OutOfBand route;
    if (path && bytes >= path->MinBytes() && path->RouteTo(endpoint, &route)) {
      calls[0].request = EncodeVariable("g", 0, 1, t, lease, &route);
      path->Send(route.peer_rank(), route.tag(), t.data, bytes, transfers.Done());
    } else {
      calls[0].request = EncodeVariable("g", 0, 1, t, lease);
    }
    session.Call(calls, options);
    Await(transfers);
  };
  WarmUp(peer, bytes, send);
  for (auto _ : state) send();
  SetBytes(state, bytes);
}

void BM_Send_Rill(benchmark::State& state) { SendRill(state, "rill", TcpTrainerDataPath(TransportOptions{})); }

void BM_Send_RillInMessage(benchmark::State& state) { SendRill(state, "rill in message", nullptr); }

void BM_Send_Protobuf(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const std::string& endpoint = RemoteSinks().protobuf;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  auto stub =
      v1::ParameterServer::NewStub(grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args));
  const char* data = reinterpret_cast<const char*>(Tensor(bytes).data());
  auto send = [&] {
    v1::VariableMessage m;
    m.mutable_header()->set_name("g");
    m.mutable_header()->mutable_tensor()->set_dtype(RILL_FP32);
    m.mutable_header()->mutable_tensor()->add_dims(static_cast<int64_t>(bytes / 4));
    m.set_data(data, bytes);
    grpc::ClientContext ctx;
    v1::Reply reply;
    const grpc::Status s = stub->SendVariable(&ctx, m, &reply);
    if (!s.ok()) state.SkipWithError(s.error_message().c_str());
  };
  WarmUp("protobuf", bytes, send);
  for (auto _ : state) send();
  SetBytes(state, bytes);
}

void BM_Send_RawTcp(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  sockaddr_in addr = Loopback(RemoteSinks().tcp_port);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    state.SkipWithError("raw tcp: cannot connect to the sink process");
    close(fd);
    return;
  }
  const void* data = Tensor(bytes).data();
  auto send = [&] {
    const uint64_t n = bytes;
    char ack = 0;
    WriteFully(fd, &n, sizeof(n));
    WriteFully(fd, data, bytes);
    ReadFully(fd, &ack, 1);
  };
  WarmUp("raw tcp", bytes, send);
  for (auto _ : state) send();
  const uint64_t end = 0;
  WriteFully(fd, &end, sizeof(end));
  close(fd);
  SetBytes(state, bytes);
}

void BM_PserverStep(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const int64_t n = static_cast<int64_t>(bytes / 4);
  std::vector<float> param(n, 1.0f), grad(n, 0.0f), fetched(n), mine(n, 0.001f);
  const std::shared_ptr<DataPath> pserver_path = ListenTcpDataPath("127.0.0.1:0", TransportOptions{});
  ParameterServer ps("127.0.0.1:0", 1, {ParamSpec{"w", "w@GRAD", RILL_FP32, {n}}}, TransportOptions{},
                     pserver_path.get());
  auto view = [&] { return std::vector<TensorBytes>{TensorBytes{RILL_FP32, {n}, {}, param.data(), bytes}}; };
  ps.Start(view());
  std::thread serving([&] {
    PserverHooks hooks;
    hooks.gradient = [&](size_t) { return static_cast<void*>(grad.data()); };
    hooks.optimize = [] {};
    hooks.parameters = view;
    ps.Serve(hooks);
  });
  TrainerSession& session = TrainerSession::Get();
  DataPath* path = TcpTrainerDataPath(TransportOptions{});
  TransportOptions options;
  const int32_t trainer = session.BindTrainerId(0);
  int64_t k = 0;
  auto call = [&](const char* method, grpc::ByteBuffer request) {
    std::vector<RpcCall> calls(1);
    calls[0].endpoint = ps.endpoint();
    calls[0].method = method;
    calls[0].request = std::move(request);
    session.Call(calls, options);
    return std::move(calls[0].response);
  };
  // As the send op does it: a gradient of the data path's size first by SendVariable, its
  // bytes beside; then one Step call with the smaller gradient, the barrier and the pull.
  auto step = [&] {
    ++k;
    SliceLease lease;
    std::vector<grpc::ByteBuffer> in_step;
    const TensorBytes g{RILL_FP32, {n}, {}, mine.data(), bytes};
    v1::OutOfBand beside;
    if (bytes >= path->MinBytes() && path->RouteTo(ps.endpoint(), &beside)) {
      TransferBatch transfers;
      grpc::ByteBuffer request = EncodeVariable("w@GRAD", trainer, k, g, lease, &beside);
      path->Send(beside.peer_rank(), beside.tag(), mine.data(), bytes, transfers.Done());
      call(kSendVariable, std::move(request));
      Await(transfers);
    } else {
      in_step.push_back(EncodeVariable("w@GRAD", trainer, k, g, lease));
    }
    v1::GetRequest get;
    get.set_name("w");
    get.set_trainer_id(trainer);
    get.set_iteration(k);
    v1::OutOfBand route;
    if (path->RouteTo(ps.endpoint(), &route)) *get.mutable_out_of_band() = route;
    std::vector<ReceivedBytes> got = ParseStepReply(call(kStep, EncodeStep(trainer, k, in_step, {get})));
    const v1::VariableHeader h = DecodeVariable(
        std::move(got.at(0)), [&](const v1::VariableHeader&) { return static_cast<void*>(fetched.data()); });
    if (h.has_out_of_band()) {
      TransferBatch transfers;
      path->Receive(route.peer_rank(), route.tag(), fetched.data(), bytes, transfers.Done());
      Await(transfers);
    }
  };
  WarmUp("pserver step", bytes, step);
  for (auto _ : state) step();
  v1::CompleteRequest done;
  done.set_trainer_id(trainer);
  call(kComplete, EncodeMessage(done));
  serving.join();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes * 2));
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t kib : {1, 64, 1024, 16 * 1024, 64 * 1024, 256 * 1024}) b->Arg(kib * 1024);
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Send_Rill)->Apply(Sizes);
BENCHMARK(BM_Send_RillInMessage)->Apply(Sizes);
BENCHMARK(BM_Send_Protobuf)->Apply(Sizes);
BENCHMARK(BM_Send_RawTcp)->Apply(Sizes);
BENCHMARK(BM_PserverStep)->Arg(1024)->Arg(1 << 20)->Arg(16 << 20)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace rill::dist

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--serve-sinks") == 0) return rill::dist::ServeSinks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
