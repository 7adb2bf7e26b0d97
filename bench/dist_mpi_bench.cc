// The MPI transport against its limit and its peer, in one run of two ranks:
//   mpirun -np 2 build/bin/rill_bench_dist_mpi      (bench/dist_mpi_compare.py runs it)
// Rank 1 serves a sink (the receiving half of ParameterServer::OnSend, for both
// transports); rank 0 runs the benchmarks, one after the other:
//   BM_MpiPingPong/B  the limit: plain MPI_Send/MPI_Recv of B bytes there and back, on
//                     MPI_COMM_WORLD from this thread; throughput B / (round trip / 2)
//   BM_MpiSendAck/B   the limit in Rill's pattern: MPI_Send of B bytes, MPI_Recv of a
//                     4-byte answer; throughput B / round trip
//   BM_Send/Mpi/B     Rill's MPI transport as it ships: the SendVariable request (header
//                     and route) pushed over MPI beside the B bytes, which go from the
//                     tensor into the sink's buffer; the answer comes back over MPI once
//                     they are in
//   BM_Send/MpiGrpcRequests/B  the same with the request as a gRPC call, as the MPI seed
//                     has it (RILL_MPI_REQUESTS=grpc)
//   BM_Send/Grpc/B    Rill's gRPC transport to the same sink: the bytes in the message
// The program initializes MPI itself (MPI_THREAD_MULTIPLE), so the raw benchmark calls
// MPI directly while Rill's MPI thread owns its own communicator.
#include <benchmark/benchmark.h>
#include <grpcpp/server_builder.h>
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "client.h"
#include "mpi_data_path.h"
#include "mpi_world.h"
#include "parameter_server.grpc.pb.h"
#include "rank_table.h"
#include "rill/abi.h"
#include "wire.h"

namespace rill::dist {
namespace {

constexpr size_t kMaxBytes = size_t{256} << 20;

std::vector<char>& Buffer() {
  static std::vector<char> b(kMaxBytes, 1);
  return b;
}

// What ParameterServer::OnSend does with the bytes, and nothing else: the header, then the
// bytes in the message or by MPI, then the answer ("" or the error).
void Accept(const grpc::ByteBuffer& request, std::function<void(const std::string& error)> answer) {
  size_t bytes = 0;
  const v1::VariableHeader h = DecodeVariable(request, [&](const v1::VariableHeader& h) {
    bytes = TensorByteSize(h);
    return static_cast<void*>(Buffer().data());
  });
  if (!h.has_out_of_band()) return answer("");
  MpiWorld::Get().Receive(h.out_of_band().rank(), h.out_of_band().tag(), Buffer().data(), bytes, std::move(answer));
}

// The sink's gRPC side; Complete stops it.
class Sink final : public v1::ParameterServer::WithRawCallbackMethod_SendVariable<
                       v1::ParameterServer::WithRawCallbackMethod_Complete<v1::ParameterServer::Service>> {
 public:
  grpc::ServerUnaryReactor* SendVariable(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override {
    auto* reactor = ctx->DefaultReactor();
    *response = EncodeMessage(v1::Reply());
    Accept(*request, [reactor](const std::string& error) {
      reactor->Finish(error.empty() ? grpc::Status::OK : grpc::Status(grpc::StatusCode::UNAVAILABLE, error));
    });
    return reactor;
  }
  grpc::ServerUnaryReactor* Complete(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer*,
                                     grpc::ByteBuffer* response) override {
    *response = EncodeMessage(v1::Reply());
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    return reactor;
  }
  void WaitComplete() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

TransportOptions Options() {
  TransportOptions o;
  o.deadline = std::chrono::milliseconds(60000);
  return o;
}

// Rank 0's view: the sink's endpoint and the MPI data path to it.
struct Peer {
  std::string endpoint;
  DataPath* data_path = nullptr;
};
Peer& ThePeer() {
  static Peer peer;
  return peer;
}

void SetBytes(benchmark::State& state, size_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

// Rank 1 answers each message of `bytes` with `answer` bytes (EchoUntilDone).
void RawRoundTrips(benchmark::State& state, int bytes, int answer) {
  char* b = Buffer().data();
  int start[2] = {bytes, answer};
  MPI_Send(start, 2, MPI_INT, 1, 0, MPI_COMM_WORLD);
  for (auto _ : state) {
    MPI_Send(b, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
    MPI_Recv(b, answer, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  // Done: rank 1 stops answering, which spins a core, while the other benchmarks run.
  MPI_Send(b, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
}

void BM_MpiPingPong(benchmark::State& state) {
  const int bytes = static_cast<int>(state.range(0));
  RawRoundTrips(state, bytes, bytes);
  SetBytes(state, static_cast<size_t>(bytes) * 2);  // each round trip moves B there and B back
}

void BM_MpiSendAck(benchmark::State& state) {
  const int bytes = static_cast<int>(state.range(0));
  RawRoundTrips(state, bytes, 4);
  SetBytes(state, static_cast<size_t>(bytes));
}

enum class Path { kMpi, kMpiGrpcRequests, kGrpc };

// As the send op does it (send_op.cc), for one tensor.
void Send(const TensorBytes& t, Path path) {
  TrainerSession& session = TrainerSession::Get();
  DataPath* data_path = path == Path::kGrpc ? nullptr : ThePeer().data_path;
  SliceLease lease;
  TransferBatch transfers;
  std::vector<RpcCall> calls(1);
  calls[0].endpoint = ThePeer().endpoint;
  calls[0].method = kSendVariable;
  if (data_path) {
    v1::OutOfBand route;
    data_path->RouteTo(ThePeer().endpoint, &route);
    calls[0].request = EncodeVariable("g", 0, 1, t, lease, &route);
    if (path == Path::kMpi) {
      data_path->Push(route, Flatten(calls[0].request), t.data, t.bytes, transfers.Done());
    } else {
      data_path->Send(route.peer_rank(), route.tag(), t.data, t.bytes, transfers.Done());
    }
  } else {
    calls[0].request = EncodeVariable("g", 0, 1, t, lease);
  }
  if (path != Path::kMpi) session.Call(calls, Options());
  std::string error;
  if (data_path && (!transfers.Wait(Options().deadline, &error) || !error.empty())) {
    std::fprintf(stderr, "send failed: %s\n", error.c_str());
    std::abort();
  }
}

TensorBytes Tensor(size_t bytes) {
  static std::vector<char> t(kMaxBytes, 2);
  return TensorBytes{RILL_UINT8, {static_cast<int64_t>(bytes)}, {}, t.data(), bytes};
}

void BM_Send(benchmark::State& state, Path path) {
  const TensorBytes t = Tensor(static_cast<size_t>(state.range(0)));
  Send(t, path);  // connected before timing, as the peers are
  for (auto _ : state) Send(t, path);
  SetBytes(state, t.bytes);
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t kib : {1, 64, 1024, 16 * 1024, 64 * 1024, 256 * 1024}) b->Arg(kib << 10);
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_MpiPingPong)->Apply(Sizes);
BENCHMARK(BM_MpiSendAck)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Send, Mpi, Path::kMpi)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Send, MpiGrpcRequests, Path::kMpiGrpcRequests)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Send, Grpc, Path::kGrpc)->Apply(Sizes);

// Rank 1, while the sink serves: each raw benchmark run sends {message size, answer size},
// then messages to answer, then an end (tag 2); size -1 ends it all. Between runs it
// waits without spinning, so the Rill benchmarks have the cores.
void EchoUntilDone() {
  char* b = Buffer().data();
  for (int start_message[2];;) {
    int& size = start_message[0];
    const int& answer = start_message[1];
    MPI_Request start;
    MPI_Irecv(start_message, 2, MPI_INT, 0, 0, MPI_COMM_WORLD, &start);
    for (int done = 0; !done;) {
      MPI_Test(&start, &done, MPI_STATUS_IGNORE);
      if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (size < 0) return;
    for (;;) {
      MPI_Status status;
      MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
      if (status.MPI_TAG == 2) {
        MPI_Recv(b, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
      }
      MPI_Recv(b, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(b, answer, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
  }
}

}  // namespace
}  // namespace rill::dist

int main(int argc, char** argv) {
  using namespace rill::dist;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2 || provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0)
      std::fprintf(stderr, "usage: mpirun -np 2 %s [benchmark options] (needs MPI_THREAD_MULTIPLE)\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  const TransportOptions options = Options();
  if (rank == 1) {
    Sink sink;
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.SetMaxReceiveMessageSize(-1);
    builder.RegisterService(&sink);
    auto server = builder.BuildAndStart();
    const std::shared_ptr<DataPath> data_path =
        JoinMpiAsPserver("127.0.0.1:" + std::to_string(port), options);  // rank 0 learns it
    data_path->ServePushes([](const std::string& request, DataPath::Answer answer) {
      grpc::Slice slice(request);
      Accept(grpc::ByteBuffer(&slice, 1), std::move(answer));
    });
    EchoUntilDone();
    sink.WaitComplete();
    data_path->ServePushes(nullptr);
    server->Shutdown();
  } else {
    int32_t trainer = -1;
    ThePeer().data_path = JoinMpiAsTrainer(&trainer, options);
    ThePeer().endpoint = RankTable::Join(Role{}, options.deadline).RoleOf(1).endpoint;
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    int stop[2] = {-1, 0};
    MPI_Send(stop, 2, MPI_INT, 1, 0, MPI_COMM_WORLD);
    std::vector<RpcCall> complete(1);
    complete[0].endpoint = ThePeer().endpoint;
    complete[0].method = kComplete;
    complete[0].request = EncodeMessage(v1::CompleteRequest());
    TrainerSession::Get().Call(complete, options);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
