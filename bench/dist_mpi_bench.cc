// The MPI transport against its limit and its peer, in one run of two ranks:
//   mpirun -np 2 build/bin/rill_bench_dist_mpi      (bench/dist_mpi_compare.py runs it)
// Rank 1 serves a sink (the receiving half of ParameterServer::OnSend, for both
// transports); rank 0 runs the benchmarks, one after the other:
//   BM_MpiPingPong/B  the limit: plain MPI_Send/MPI_Recv of B bytes there and back, on
//                     MPI_COMM_WORLD from this thread; throughput B / (round trip / 2)
//   BM_SendMpi/B      Rill's MPI transport: SendVariable with the header and route over
//                     gRPC, the B bytes by MPI from the tensor into the sink's buffer;
//                     answered once they are in
//   BM_SendGrpc/B     Rill's gRPC transport to the same sink: the bytes in the message
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

// What ParameterServer::OnSend does with the bytes, and nothing else; Complete stops it.
class Sink final : public v1::ParameterServer::WithRawCallbackMethod_SendVariable<
                       v1::ParameterServer::WithRawCallbackMethod_Complete<v1::ParameterServer::Service>> {
 public:
  grpc::ServerUnaryReactor* SendVariable(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override {
    auto* reactor = ctx->DefaultReactor();
    size_t bytes = 0;
    const v1::VariableHeader h = DecodeVariable(*request, [&](const v1::VariableHeader& h) {
      bytes = TensorByteSize(h);
      return static_cast<void*>(Buffer().data());
    });
    *response = EncodeMessage(v1::Reply());
    if (!h.has_out_of_band()) {
      reactor->Finish(grpc::Status::OK);
      return reactor;
    }
    MpiWorld::Get().Receive(h.out_of_band().rank(), h.out_of_band().tag(), Buffer().data(), bytes,
                            [reactor](const std::string& error) {
                              reactor->Finish(error.empty() ? grpc::Status::OK
                                                            : grpc::Status(grpc::StatusCode::UNAVAILABLE, error));
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

void BM_MpiPingPong(benchmark::State& state) {
  const int bytes = static_cast<int>(state.range(0));
  char* b = Buffer().data();
  int size = bytes;
  MPI_Send(&size, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);  // rank 1 echoes messages of `size` bytes
  for (auto _ : state) {
    MPI_Send(b, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
    MPI_Recv(b, bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  // Done: rank 1 stops echoing, which spins a core, while the other benchmarks run.
  MPI_Send(b, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
  SetBytes(state, static_cast<size_t>(bytes) * 2);  // each round trip moves B there and B back
}

void Send(const TensorBytes& t, DataPath* data_path) {
  TrainerSession& session = TrainerSession::Get();
  SliceLease lease;
  TransferBatch transfers;
  std::vector<RpcCall> calls(1);
  calls[0].endpoint = ThePeer().endpoint;
  calls[0].method = kSendVariable;
  if (data_path) {
    const v1::OutOfBand route = data_path->RouteTo(ThePeer().endpoint);
    calls[0].request = EncodeVariable("g", 0, 1, t, lease, &route);
    data_path->Send(route.peer_rank(), route.tag(), t.data, t.bytes, transfers.Done());
  } else {
    calls[0].request = EncodeVariable("g", 0, 1, t, lease);
  }
  session.Call(calls, Options());
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

void BM_SendMpi(benchmark::State& state) {
  const TensorBytes t = Tensor(static_cast<size_t>(state.range(0)));
  Send(t, ThePeer().data_path);  // connected before timing, as the peers are
  for (auto _ : state) Send(t, ThePeer().data_path);
  SetBytes(state, t.bytes);
}

void BM_SendGrpc(benchmark::State& state) {
  const TensorBytes t = Tensor(static_cast<size_t>(state.range(0)));
  Send(t, nullptr);
  for (auto _ : state) Send(t, nullptr);
  SetBytes(state, t.bytes);
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t kib : {1, 64, 1024, 16 * 1024, 64 * 1024, 256 * 1024}) b->Arg(kib << 10);
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_MpiPingPong)->Apply(Sizes);
BENCHMARK(BM_SendMpi)->Apply(Sizes);
BENCHMARK(BM_SendGrpc)->Apply(Sizes);

// Rank 1, while the sink serves: each BM_MpiPingPong run sends the message size, then
// messages to echo, then an end (tag 2); size -1 ends it all. Between runs it waits
// without spinning, so the Rill benchmarks have the cores.
void EchoUntilDone() {
  char* b = Buffer().data();
  for (int size = 0;;) {
    MPI_Request start;
    MPI_Irecv(&size, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &start);
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
      MPI_Send(b, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
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
    if (rank == 0) std::fprintf(stderr, "usage: mpirun -np 2 %s [benchmark options] (needs MPI_THREAD_MULTIPLE)\n", argv[0]);
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
    JoinMpiAsPserver("127.0.0.1:" + std::to_string(port), options);  // rank 0 learns the endpoint
    EchoUntilDone();
    sink.WaitComplete();
    server->Shutdown();
  } else {
    int32_t trainer = -1;
    ThePeer().data_path = JoinMpiAsTrainer(&trainer, options);
    ThePeer().endpoint = RankTable::Join(Role{}, options.deadline).RoleOf(1).endpoint;
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    int stop = -1;
    MPI_Send(&stop, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
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
