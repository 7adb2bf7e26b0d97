#include "core/cli/launch.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <thread>

#include "core/cli/cluster_status.h"
#include "core/cli/pserver_watch.h"
#include "core/errors.h"
#include "core/io/atomic_file.h"

extern char** environ;

namespace rill::core {
namespace {

struct Process {
  std::string name;  // "pserver 0", "trainer 1"
  std::string log;
  pid_t pid = -1;
  bool running = false;
  bool exited = false;
  int status = 0;    // waitpid's, once exited
  int restarts = 0;  // pservers of a checkpointing cluster: how often it was started again
};

std::string SelfExe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("launch: cannot find the rill executable (/proc/self/exe): " + ec.message());
  return p.string();
}

// Starts `p`, its output to its log: a fresh log, or appended to for a restart.
void Spawn(Process& p, const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
           bool append = false) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, p.log.c_str(),
                                   O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('=') + 1);
    bool overridden = false;
    for (const auto& x : extra_env) overridden = overridden || x.rfind(key, 0) == 0;
    if (!overridden) env.push_back(kv);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int rc = posix_spawnp(&p.pid, args[0].c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error("launch: cannot start " + p.name + ": " + std::strerror(rc));
  p.running = true;
}

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += "\n    " + l;
  return out;
}

std::string Describe(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

void StopAll(std::vector<Process>& procs) {
  for (auto& p : procs) {
    if (p.running) kill(p.pid, SIGTERM);
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (auto& p : procs) {
    if (!p.running) continue;
    while (waitpid(p.pid, &p.status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > give_up) {
        kill(p.pid, SIGKILL);
        waitpid(p.pid, &p.status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    p.running = false;
    p.exited = true;
  }
}

}  // namespace

void WriteClusterSpec(const ClusterSpec& spec, const std::string& path) {
  WriteFileAtomically(path, [&](std::ostream& out) {
    out << "# The cluster of these programs, for `rill launch`: transport, trainer count, pserver endpoints.\n";
    out << "transport " << spec.transport << "\n";
    out << "trainers " << spec.trainers << "\n";
    for (const auto& e : spec.pservers) out << "pserver " << e << "\n";
    if (!spec.checkpoint_dir.empty()) out << "checkpoint " << spec.checkpoint_dir << "\n";
  });
}

ClusterSpec ReadClusterSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read '" + path + "' (written by `rill transpile`)", RILL_NOT_FOUND);
  ClusterSpec spec;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string key, value;
    words >> key >> value;
    if (key == "trainers") {
      spec.trainers = std::atoi(value.c_str());
    } else if (key == "transport" && (value == "grpc" || value == "mpi")) {
      spec.transport = value;
    } else if (key == "pserver" && !value.empty()) {
      spec.pservers.push_back(value);
    } else if (key == "checkpoint" && !value.empty()) {
      spec.checkpoint_dir = line.substr(line.find(value));  // the rest of the line: a path may hold spaces
    } else {
      throw Error(path + ":" + std::to_string(n) +
                  ": expected 'transport grpc|mpi', 'trainers N', 'pserver HOST:PORT' or 'checkpoint DIR', got '" +
                  line + "'");
    }
  }
  if (spec.trainers < 1 || spec.pservers.empty())
    throw Error(path + ": needs 'trainers N' (N >= 1) and a 'pserver' line");
  return spec;
}

ClusterProcess ProcessOf(const std::string& dir, const ClusterSpec& spec, size_t index) {
  namespace fs = std::filesystem;
  ClusterProcess p;
  const bool pserver = index < spec.pservers.size();
  const std::string id = std::to_string(pserver ? index : index - spec.pservers.size());
  p.name = (pserver ? "pserver " : "trainer ") + id;
  p.program = (fs::path(dir) / (pserver ? "pserver_" + id + ".pbtxt" : "trainer.pbtxt")).string();
  p.startup = (fs::path(dir) / (pserver ? "pserver_" + id + "_startup.pbtxt" : "trainer_startup.pbtxt")).string();
  if (!pserver) p.trainer = static_cast<int32_t>(index - spec.pservers.size());
  return p;
}

bool LauncherRank(int64_t* rank, int64_t* size) {
  static const char* const kRanks[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMIX_RANK", nullptr},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& names : kRanks) {
    const char* r = std::getenv(names[0]);
    if (r == nullptr) continue;
    *rank = std::atoll(r);
    const char* n = names[1] ? std::getenv(names[1]) : nullptr;
    *size = n ? std::atoll(n) : -1;
    return true;
  }
  return false;
}

namespace {
// The variable `name` of Paddle's job environment; throws naming it when it is not set.
std::string PaddleVariable(const char* name, const std::string& role) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    throw Error("TRAINING_ROLE is " + role + ", but " + name + " is not set (Paddle's parameter-server environment)",
                RILL_INVALID_ARGUMENT);
  }
  return value;
}

int64_t PaddleCount(const char* name, const std::string& role) {
  const std::string text = PaddleVariable(name, role);
  if (text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
    throw Error(std::string(name) + " must be a count, got '" + text + "'", RILL_INVALID_ARGUMENT);
  }
  return std::stoll(text);
}

std::string JoinEndpoints(const std::vector<std::string>& endpoints) {
  std::string list;
  for (const auto& e : endpoints) list += (list.empty() ? "" : ",") + e;
  return list;
}
}  // namespace

bool PaddleRoleIndex(const std::string& dir, const ClusterSpec& spec, size_t* index) {
  const char* role_env = std::getenv("TRAINING_ROLE");
  if (role_env == nullptr) return false;
  const std::string role = role_env;
  if (role != "PSERVER" && role != "TRAINER") {
    throw Error("TRAINING_ROLE must be PSERVER or TRAINER, got '" + role + "'", RILL_INVALID_ARGUMENT);
  }
  const std::string list = PaddleVariable("PADDLE_PSERVERS_IP_PORT_LIST", role);
  if (list != JoinEndpoints(spec.pservers)) {
    throw Error("PADDLE_PSERVERS_IP_PORT_LIST is " + list + ", but " + dir + " was transpiled for the pservers " +
                    JoinEndpoints(spec.pservers) + " (cluster.txt): transpile with --pservers " + list,
                RILL_INVALID_ARGUMENT);
  }
  if (const int64_t trainers = PaddleCount("PADDLE_TRAINERS_NUM", role); trainers != spec.trainers) {
    throw Error("PADDLE_TRAINERS_NUM is " + std::to_string(trainers) + ", but " + dir + " was transpiled for " +
                    std::to_string(spec.trainers) + " trainers (cluster.txt)",
                RILL_INVALID_ARGUMENT);
  }
  if (role == "TRAINER") {
    const int64_t id = PaddleCount("PADDLE_TRAINER_ID", role);
    if (id >= spec.trainers) {
      throw Error("PADDLE_TRAINER_ID " + std::to_string(id) + " is not below PADDLE_TRAINERS_NUM " +
                      std::to_string(spec.trainers),
                  RILL_INVALID_ARGUMENT);
    }
    *index = spec.pservers.size() + static_cast<size_t>(id);
    return true;
  }
  const std::string endpoint = PaddleVariable("POD_IP", role) + ":" + PaddleVariable("PADDLE_PORT", role);
  const auto at = std::find(spec.pservers.begin(), spec.pservers.end(), endpoint);
  if (at == spec.pservers.end()) {
    throw Error(
        "this pserver's endpoint " + endpoint + " (POD_IP:PADDLE_PORT) is not in PADDLE_PSERVERS_IP_PORT_LIST " + list,
        RILL_INVALID_ARGUMENT);
  }
  *index = static_cast<size_t>(at - spec.pservers.begin());
  return true;
}

std::string WithTrainer(std::string s, int32_t trainer) {
  const std::string from = "{trainer}", to = std::to_string(trainer);
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

namespace {

// What each process runs, pservers first, then trainers.
struct Plan {
  std::vector<Process> procs;
  std::vector<std::vector<std::string>> args;  // `rill run ...` of each
  std::vector<std::string> env;                // for every process
  size_t pservers = 0;
  std::string status_log;  // where the pservers' status reports go
};

Plan MakePlan(const LaunchOptions& options, const ClusterSpec& spec, const std::string& log_dir) {
  const std::string exe = SelfExe();
  Plan plan;
  plan.pservers = spec.pservers.size();
  plan.status_log = (std::filesystem::path(log_dir) / "status.json").string();
  if (options.deadline_given) plan.env.push_back("RILL_RPC_DEADLINE_MS=" + std::to_string(options.deadline.count()));
  const size_t count = spec.pservers.size() + static_cast<size_t>(spec.trainers);
  for (size_t i = 0; i < count; ++i) {
    const ClusterProcess p = ProcessOf(options.dir, spec, i);
    const std::string log = p.trainer >= 0 ? "trainer." + std::to_string(p.trainer) : "pserver." + std::to_string(i);
    plan.procs.push_back({p.name, (std::filesystem::path(log_dir) / (log + ".log")).string()});
    std::vector<std::string> args = {exe, "run", p.program, "--startup", p.startup};
    args.insert(args.end(), options.common_args.begin(), options.common_args.end());
    if (!options.profile_dir.empty()) {
      args.insert(args.end(), {"--profile", (std::filesystem::path(options.profile_dir) / (log + ".json")).string()});
    }
    if (p.trainer >= 0) {
      for (const auto& a : options.trainer_args) args.push_back(WithTrainer(a, p.trainer));
    }
    plan.args.push_back(std::move(args));
  }
  return plan;
}

// The process of the rank mpirun reports first failed, if its report names one, and how
// mpirun says it failed. Open MPI 4 writes one of:
//   "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\nwith errorcode 1."
//   "process rank 3 with PID 0 on node vm exited on signal 9 (Killed)."
//   "Process name: [[39213,1],3]\n  Exit code:    1"
const Process* FailedRank(const std::string& mpirun_log, const Plan& plan, std::string* how) {
  std::ifstream in(mpirun_log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The rank after `marker` (and then after `then`), and the text from `how_from` after it
  // to the end of its sentence.
  auto find = [&](const std::string& marker, const std::string& then, const std::string& how_from) -> const Process* {
    size_t at = text.find(marker);
    if (at == std::string::npos) return nullptr;
    at += marker.size();
    if (!then.empty()) {
      at = text.find(then, at);
      if (at == std::string::npos) return nullptr;
      at += then.size();
    }
    const char* digits = text.c_str() + at;
    char* end = nullptr;
    const unsigned long rank = std::strtoul(digits, &end, 10);
    if (end == digits || rank >= plan.procs.size()) return nullptr;
    const size_t from = text.find(how_from, static_cast<size_t>(end - text.c_str()));
    if (from != std::string::npos) {
      const size_t stop = text.find_first_of(".\n", from);
      *how = text.substr(from, stop == std::string::npos ? std::string::npos : stop - from);
    }
    return &plan.procs[rank];
  };
  if (const Process* p = find("MPI_ABORT was invoked on rank ", "", "with errorcode")) return p;
  if (const Process* p = find("process rank ", "", "exited")) return p;
  if (const Process* p = find("Process name: [[", "],", "Exit code")) return p;
  return nullptr;
}

// How the launcher asks the pservers for their reports (PserverWatch): `rill status DIR
// --json` (the command a transport plugin provides) as a child process of its own.
std::function<std::string()> StatusAsker(const LaunchOptions& options, const Plan& plan) {
  std::vector<std::string> args = {plan.args[0][0], "status", options.dir, "--json", "--deadline-ms", "500"};
  args.insert(args.end(), options.common_args.begin(), options.common_args.end());
  return [args, env = plan.env, log = plan.status_log] {
    Process ask{"status", log};
    Spawn(ask, args, env);
    int ignored = 0;
    while (waitpid(ask.pid, &ignored, 0) < 0 && errno == EINTR) {}
    std::ifstream in(log);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
}

// Each process's state for ClusterStatus, with the waits the pservers report.
std::vector<ProcessState> StatesOf(const Plan& plan, const ClusterSpec& spec, const ClusterWaits& waits) {
  std::vector<ProcessState> out;
  for (size_t i = 0; i < plan.procs.size(); ++i) {
    const Process& p = plan.procs[i];
    ProcessState s{p.name, p.log, i < plan.pservers, p.running, p.exited, p.status};
    if (i < plan.pservers) {
      const auto it = waits.pserver_waits_for.find(spec.pservers[i]);
      if (it != waits.pserver_waits_for.end()) s.waits_for = it->second;
    } else if (const auto it = waits.trainer_at_barrier.find(static_cast<int32_t>(i - plan.pservers));
               it != waits.trainer_at_barrier.end()) {
      s.at_barrier = it->second;
    }
    out.push_back(std::move(s));
  }
  return out;
}

void LaunchMpi(const LaunchOptions& options, const ClusterSpec& spec, Plan& plan, const std::string& log_dir) {
  // mpirun starts `sh -c` per process, which execs rill with its output to its own log.
  std::vector<std::string> args = {"mpirun", "--oversubscribe"};
  if (geteuid() == 0) args.push_back("--allow-run-as-root");
  if (options.deadline_given) args.insert(args.end(), {"-x", "RILL_RPC_DEADLINE_MS"});
  for (size_t i = 0; i < plan.procs.size(); ++i) {
    if (i > 0) args.push_back(":");
    args.insert(args.end(),
                {"-np", "1", "sh", "-c", R"(log=$1; shift; exec "$@" >"$log" 2>&1)", "sh", plan.procs[i].log});
    args.insert(args.end(), plan.args[i].begin(), plan.args[i].end());
  }
  Process mpirun{"mpirun", (std::filesystem::path(log_dir) / "mpirun.log").string()};
  // A process is running once its log exists (its `sh` made it): none may be left from before.
  for (const Process& p : plan.procs) std::filesystem::remove(p.log);
  Spawn(mpirun, args, plan.env);
  int status = 0;
  {
    ClusterStatus display(isatty(STDERR_FILENO) != 0);
    PserverWatch watch(StatusAsker(options, plan));
    for (pid_t r = 0; r != mpirun.pid;) {
      r = waitpid(mpirun.pid, &status, WNOHANG);
      if (r < 0 && errno != EINTR) throw Error(std::string("launch: waiting for mpirun: ") + std::strerror(errno));
      for (Process& p : plan.procs) p.running = p.running || std::filesystem::exists(p.log);
      if (r == 0) {
        display.Update(StatesOf(plan, spec, watch.Latest()));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    // mpirun ends once every process did: all exited with its status, or it stopped them.
    for (Process& p : plan.procs) {
      p.running = false;
      p.exited = true;
      p.status = status;
    }
    if (status == 0) display.Finish(StatesOf(plan, spec, ClusterWaits{}));
  }
  if (status == 0) return;
  std::string error = "launch: mpirun failed (" + Describe(status) + ")";
  std::string how;
  if (const Process* p = FailedRank(mpirun.log, plan, &how)) {
    error += "; the first to fail was " + p->name + " (" + how + "). " + p->log + " ends:" + Tail(p->log, 8);
    throw Error(error);
  }
  // mpirun does not always say (its report of an MPI_Abort can get lost): the first
  // process, in rank order, whose log has an error.
  for (const Process& p : plan.procs) {
    std::ifstream in(p.log);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("rill: error:", 0) == 0) {
        throw Error(error + "; " + p.name + " failed: " + line.substr(std::strlen("rill: ")) + " (" + p.log + ")");
      }
    }
  }
  throw Error(error + ". " + mpirun.log + " ends:" + Tail(mpirun.log, 12));
}

void LaunchGrpc(const LaunchOptions& options, const ClusterSpec& spec, Plan& plan) {
  std::vector<Process>& procs = plan.procs;
  try {
    for (size_t i = 0; i < procs.size(); ++i) {
      std::vector<std::string> proc_env = plan.env;
      if (i >= plan.pservers) proc_env.push_back("RILL_TRAINER_ID=" + std::to_string(i - plan.pservers));
      Spawn(procs[i], plan.args[i], proc_env);
    }
    size_t trainers_left = spec.trainers, left = procs.size();
    std::chrono::steady_clock::time_point pservers_due{};
    ClusterStatus status(isatty(STDERR_FILENO) != 0);
    PserverWatch watch(StatusAsker(options, plan));
    const auto states = [&] { return StatesOf(plan, spec, watch.Latest()); };
    while (left > 0) {
      status.Update(states());
      bool reaped = false;
      for (size_t i = 0; i < procs.size(); ++i) {
        Process& p = procs[i];
        int status = 0;
        if (!p.running || waitpid(p.pid, &status, WNOHANG) != p.pid) continue;  // only ours: not the watch's
        reaped = true;
        p.running = false;
        p.exited = true;
        p.status = status;
        // A pserver of a checkpointing cluster that died while trainers train is started
        // again: it restores its last checkpoint and the trainers rejoin it.
        if (status != 0 && i < plan.pservers && !spec.checkpoint_dir.empty() && trainers_left > 0 &&
            p.restarts < kPserverRestarts) {
          ++p.restarts;
          std::fprintf(stderr, "launch: %s died (%s); starting it again (restart %d of at most %d)\n", p.name.c_str(),
                       Describe(status).c_str(), p.restarts, kPserverRestarts);
          Spawn(p, plan.args[i], plan.env, /*append=*/true);
          p.exited = false;
          continue;
        }
        --left;
        if (status != 0) {
          StopAll(procs);
          ClusterStatus(false).Finish(states());
          throw Error("launch: " + p.name + " failed (" + Describe(status) + "); the others were stopped. " + p.log +
                      " ends:" + Tail(p.log, 8));
        }
        if (i >= plan.pservers && --trainers_left == 0) {
          pservers_due = std::chrono::steady_clock::now() + options.deadline;
        }
      }
      if (reaped) continue;
      if (trainers_left == 0 && std::chrono::steady_clock::now() > pservers_due) {
        std::string stuck;
        for (const auto& p : procs) {
          if (p.running) stuck += (stuck.empty() ? "" : ", ") + p.name;
        }
        StopAll(procs);
        throw Error("launch: every trainer finished but " + stuck + " did not exit within " +
                    std::to_string(options.deadline.count()) + " ms; stopped");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    status.Finish(states());
  } catch (...) {
    StopAll(procs);
    throw;
  }
}

}  // namespace

void Launch(const LaunchOptions& options) {
  namespace fs = std::filesystem;
  const ClusterSpec spec = ReadClusterSpec((fs::path(options.dir) / "cluster.txt").string());
  const std::string transport = options.transport.empty() ? spec.transport : options.transport;
  if (transport != "grpc" && transport != "mpi")
    throw Error("launch: --transport is grpc or mpi, got '" + transport + "'");
  if (transport != spec.transport) {
    throw Error("launch: " + options.dir + " was transpiled for " + spec.transport + " (cluster.txt), not " +
                transport + "; transpile again with --transport " + transport);
  }
  const std::string log_dir = options.log_dir.empty() ? (fs::path(options.dir) / "logs").string() : options.log_dir;
  fs::create_directories(log_dir);
  if (!options.profile_dir.empty()) fs::create_directories(options.profile_dir);
  Plan plan = MakePlan(options, spec, log_dir);
  if (transport == "mpi") {
    LaunchMpi(options, spec, plan, log_dir);
  } else {
    LaunchGrpc(options, spec, plan);
  }
  for (size_t i = plan.pservers; i < plan.procs.size(); ++i) {
    std::ifstream in(plan.procs[i].log);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("rill: iteration ", 0) == 0) continue;  // its progress, shown while it ran
      std::printf("[%s] %s\n", plan.procs[i].name.c_str(), line.c_str());
    }
  }
  std::fflush(stdout);
}

}  // namespace rill::core
