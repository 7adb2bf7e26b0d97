// `rill status`: what each pserver is doing, asked over the service itself (the Status
// call, with the token and TLS settings of the trainers: RILL_DIST_TOKEN, RILL_TLS_CA).
#include "status_command.h"

#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "client.h"
#include "ops.h"
#include "wire.h"

namespace rill::dist {
namespace {

constexpr const char* kUsage = "HOST:PORT...|DIR [--json] [--deadline-ms MS]";

struct StatusArgs {
  std::vector<std::string> endpoints;
  bool json = false;
  int64_t deadline_ms = 5000;
};

Error Usage(const std::string& message) {
  return Error(message + " (usage: rill status " + kUsage + ")", RILL_INVALID_ARGUMENT);
}

// The pservers of a transpiled cluster: DIR/cluster.txt's "pserver HOST:PORT" lines.
std::vector<std::string> ClusterPservers(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "cluster.txt").string();
  std::ifstream in(path);
  if (!in) throw Usage("'" + dir + "' is a directory without a cluster.txt: not a transpiled cluster");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string key, value;
    if (words >> key >> value && key == "pserver") out.push_back(value);
  }
  if (out.empty()) throw Usage(path + " names no pserver");
  return out;
}

StatusArgs Parse(const std::vector<std::string>& args) {
  StatusArgs a;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--json") {
      a.json = true;
    } else if (arg == "--deadline-ms" || arg.rfind("--deadline-ms=", 0) == 0) {
      std::string value = arg.size() > 13 ? arg.substr(14) : (i + 1 < args.size() ? args[++i] : "");
      size_t used = 0;
      try {
        a.deadline_ms = std::stoll(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != value.size() || a.deadline_ms < 1) {
        throw Usage("--deadline-ms takes a positive number of milliseconds, got '" + value + "'");
      }
    } else if (arg == "-h" || arg == "--help") {
      a.endpoints.clear();
      return a;
    } else if (arg.rfind("-", 0) == 0) {
      throw Usage("unknown option '" + arg + "'");
    } else if (std::filesystem::is_directory(arg)) {
      for (auto& e : ClusterPservers(arg)) a.endpoints.push_back(std::move(e));
    } else if (arg.rfind(':') == std::string::npos || arg.rfind(':') + 1 == arg.size()) {
      throw Usage("'" + arg + "' is neither HOST:PORT nor a transpiled cluster's directory");
    } else {
      try {
        CheckEndpoint("rill status", arg);
      } catch (const Error& e) {
        throw Usage(e.what());
      }
      a.endpoints.push_back(arg);
    }
  }
  if (a.endpoints.empty()) throw Usage("no pserver given");
  return a;
}

std::string Bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string Seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000);
  return buf;
}

// `sync`: the pserver trains synchronously, so a waiting trainer waits at a barrier; async,
// for the answer to its step.
std::string TrainerLine(const v1::TrainerStatus& t, bool sync) {
  std::ostringstream os;
  os << "  trainer " << t.trainer_id() << ": ";
  switch (t.state()) {
    case v1::TrainerStatus::NOT_CONNECTED: return os.str() + "not connected";
    case v1::TrainerStatus::TRAINING: os << "training (last named iteration " << t.iteration() << ")"; break;
    case v1::TrainerStatus::AT_BARRIER:
      os << (sync ? "waiting at the barrier of iteration " : "waiting for the answer to its step ") << t.iteration();
      break;
    case v1::TrainerStatus::COMPLETED: os << "completed"; break;
    default: os << "state " << t.state(); break;
  }
  os << ", heard from " << t.last_heard_ms_ago() << " ms ago";
  return os.str();
}

void PrintText(const v1::ServerStatus& s) {
  int connected = 0, completed = 0, at_barrier = 0;
  for (const auto& t : s.trainers()) {
    connected += t.state() == v1::TrainerStatus::TRAINING || t.state() == v1::TrainerStatus::AT_BARRIER;
    completed += t.state() == v1::TrainerStatus::COMPLETED;
    at_barrier += t.state() == v1::TrainerStatus::AT_BARRIER;
  }
  std::string params;
  for (const auto& p : s.parameters()) params += (params.empty() ? "" : ", ") + p;
  std::printf("pserver %s: iteration %lld%s, up %s\n", s.endpoint().c_str(), static_cast<long long>(s.iteration()),
              s.optimizing() ? " (optimizing the next)" : "", Seconds(s.uptime_ms()).c_str());
  const bool sync = s.mode().empty() || s.mode() == "sync";  // an older pserver's status has no mode
  std::printf("  training: %s\n", s.mode().empty() ? "sync" : s.mode().c_str());
  if (!s.checkpoint_path().empty()) {
    std::printf("  checkpoints: every %lld iterations to %s; last at %s%s\n",
                static_cast<long long>(s.checkpoint_every()), s.checkpoint_path().c_str(),
                s.last_checkpoint() < 0 ? "none yet" : ("iteration " + std::to_string(s.last_checkpoint())).c_str(),
                s.restored_iteration() < 0
                    ? ""
                    : ("; started again, from iteration " + std::to_string(s.restored_iteration())).c_str());
  }
  std::printf("  trainers: %d of %d connected, %d %s, %d completed\n", connected, s.fanin(), at_barrier,
              sync ? "at the barrier" : "waiting for their step's answer", completed);
  std::printf("  barrier waits: %lld, %s in all\n", static_cast<long long>(s.barrier_waits()),
              Seconds(s.barrier_wait_ms()).c_str());
  std::printf("  tensor bytes: %s in (gradients), %s out (parameters); large tensors travel by %s\n",
              Bytes(s.bytes_in()).c_str(), Bytes(s.bytes_out()).c_str(), s.data_path().c_str());
  std::printf("  parameters: %s\n", params.c_str());
  for (const auto& t : s.trainers()) std::printf("%s\n", TrainerLine(t, sync).c_str());
}

void PrintJson(const v1::ServerStatus& s) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(s, &json, options).ok())
    throw Error("cannot write the status as JSON");
  std::printf("%s\n", json.c_str());
}

// Why `call` to `endpoint` got no status, in the words a user acts on: nothing listens
// there, something that is no pserver does, or a pserver that did not answer in time.
std::string WhyNoStatus(const RpcCall& call, const std::string& failure) {
  const grpc::Status& s = call.status;
  const std::string message = s.error_message();
  const std::string at = "pserver " + call.endpoint + ": ";
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE && message.find("Connection refused") != std::string::npos) {
    return at + "connection refused (nothing listens there)";
  }
  if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    return at + "not a pserver (a gRPC server without Rill's ParameterServer service)";
  }
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::INTERNAL) {
    return at + "not a pserver (it does not answer as a gRPC server: " + message + ")";
  }
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return at + "connected, but no answer within the deadline (--deadline-ms): not a pserver, or one that is stuck";
  }
  return failure;
}

void Status(const std::vector<std::string>& args) {
  const StatusArgs a = Parse(args);
  if (a.endpoints.empty()) {  // --help
    std::printf(
        "rill status %s\n"
        "  What each pserver is doing: its iteration, each trainer's state (not connected, training,\n"
        "  waiting at the barrier, completed), barrier waits, tensor bytes in and out, uptime.\n"
        "  DIR: every pserver of a transpiled cluster (its cluster.txt). The call carries RILL_DIST_TOKEN\n"
        "  and uses TLS with RILL_TLS_CA, as trainers do.\n"
        "  --json            one JSON object per pserver, one per line (fields of rill.dist.v1.ServerStatus)\n"
        "  --deadline-ms MS  how long to wait for each pserver (default 5000)\n",
        kUsage);
    return;
  }
  TransportOptions options = TransportOptions::Resolve(a.deadline_ms);
  options.deadline = std::chrono::milliseconds(a.deadline_ms);  // the flag, not RILL_RPC_DEADLINE_MS
  options.deadline_setting = "--deadline-ms";
  options.wait_for_pserver = false;  // a status asks once: an endpoint not listening is the answer
  std::string failures;
  for (const std::string& endpoint : a.endpoints) {
    std::vector<RpcCall> calls(1);
    calls[0].endpoint = endpoint;
    calls[0].method = kStatus;
    calls[0].subject = "request";
    calls[0].request = EncodeMessage(v1::StatusRequest());
    try {
      TrainerSession::Get().Call(calls, options);
      v1::ServerStatus status;
      DecodeMessage(calls[0].response, &status);
      a.json ? PrintJson(status) : PrintText(status);
    } catch (const std::exception& e) {
      failures += (failures.empty() ? "" : "; ") + WhyNoStatus(calls[0], e.what());
    }
    std::fflush(stdout);
  }
  if (!failures.empty()) throw Error(failures, RILL_UNAVAILABLE);
}

}  // namespace

void RegisterStatusCommand(Registrar& r) {
  r.Command("status", "what each pserver is doing: iteration, trainers (waiting at the barrier, ...), bytes, uptime",
            kUsage, &Status);
}

}  // namespace rill::dist
