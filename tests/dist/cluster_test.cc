// Parameter-server clusters of real `rill` processes on loopback, transpiled from
// fit_a_line: by hand, and each failure the transport must report instead of hanging.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "test_util.h"

namespace rill::test {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

const std::string kSource = RILL_SOURCE_DIR;
const std::string kFitALine = kSource + "/examples/fit_a_line/";

class DistCluster : public ::testing::Test {
 protected:
  // The data and the training program, made once.
  static void SetUpTestSuite() {
    dir_ = TempPath("dist_cluster");
    ASSERT_EQ(MakeFitALineTraining(dir_), "");
  }

  // Transpiles for `trainers` and `pservers` fresh loopback ports; returns the directory.
  std::string Transpile(int trainers, int pservers) {
    static int n = 0;
    const std::string out = dir_ + "/cluster" + std::to_string(++n);
    endpoints_.clear();
    std::string list;
    for (int i = 0; i < pservers; ++i) {
      endpoints_.push_back("127.0.0.1:" + std::to_string(FreeLoopbackPort()));
      list += (i ? "," : "") + endpoints_.back();
    }
    const auto r = RunRill({"transpile", dir_ + "/train.pbtxt", "--startup", kFitALine + "startup.pbtxt", "--trainers",
                            std::to_string(trainers), "--pservers", list, "-o", out});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }
  static std::vector<std::string> Pserver(const std::string& dir, int i) {
    const std::string p = dir + "/pserver_" + std::to_string(i);
    return {"run", p + ".pbtxt", "--startup", p + "_startup.pbtxt"};
  }
  static std::vector<std::string> Trainer(const std::string& dir, int iterations) {
    return {"run",          dir + "/trainer.pbtxt",      "--startup", dir + "/trainer_startup.pbtxt",
            "--feed",       "x=" + dir_ + "/data/x.npy", "--feed",    "y=" + dir_ + "/data/y.npy",
            "--iterations", std::to_string(iterations),  "--fetch",   "w"};
  }

  static std::string dir_;
  std::vector<std::string> endpoints_;
};
std::string DistCluster::dir_;

void ExpectFailsWith(const CommandResult& r, const std::string& text) {
  ASSERT_FALSE(r.timed_out) << "still running; stderr so far: " << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
}

TEST_F(DistCluster, RunsByHandOneRillRunPerProcess) {
  const std::string dir = Transpile(2, 2);
  RillProcess ps0(Pserver(dir, 0)), ps1(Pserver(dir, 1));
  RillProcess t0(Trainer(dir, 20), "RILL_TRAINER_ID=0"), t1(Trainer(dir, 20), "RILL_TRAINER_ID=1");
  const CommandResult r0 = t0.Wait(seconds(60)), r1 = t1.Wait(seconds(60));
  ASSERT_EQ(r0.exit_code, 0) << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  EXPECT_EQ(r0.out, r1.out);  // both hold the pservers' parameters
  EXPECT_EQ(r0.out.rfind("w fp32 [13,1] ", 0), 0u) << r0.out;
  // Both trainers completed: the pservers end by themselves, cleanly.
  for (RillProcess* ps : {&ps0, &ps1}) {
    const CommandResult r = ps->Wait(seconds(20));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
  }
}

// `rill run DIR` takes its part of the cluster from the environment a cluster's own tools
// set: Paddle's parameter-server job variables (its role maker's, as Kubernetes jobs set
// them) or Slurm's srun (SLURM_PROCID, pservers first). A pserver by Paddle's, one trainer
// by Paddle's and one by Slurm's train together.
TEST_F(DistCluster, EachProcessTakesItsRoleFromPaddlesOrSlurmsEnvironment) {
  const std::string dir = Transpile(2, 1);
  const std::string endpoint = endpoints_[0], port = endpoint.substr(endpoint.find(':') + 1);
  const std::string paddle = "PADDLE_PSERVERS_IP_PORT_LIST=" + endpoint + " PADDLE_TRAINERS_NUM=2";
  std::vector<std::string> trainer = Trainer(dir, 20);
  trainer[1] = dir;                                         // the cluster, not its trainer's program
  trainer.erase(trainer.begin() + 2, trainer.begin() + 4);  // nor its startup: DIR has it
  RillProcess ps({"run", dir}, paddle + " TRAINING_ROLE=PSERVER POD_IP=127.0.0.1 PADDLE_PORT=" + port);
  RillProcess t0(trainer, paddle + " TRAINING_ROLE=TRAINER PADDLE_TRAINER_ID=0");
  RillProcess t1(trainer, "SLURM_PROCID=2 SLURM_NTASKS=3");
  const CommandResult r0 = t0.Wait(seconds(60)), r1 = t1.Wait(seconds(60));
  ASSERT_EQ(r0.exit_code, 0) << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  EXPECT_EQ(r0.out, r1.out);  // both hold the pserver's parameters
  EXPECT_EQ(r0.out.rfind("w fp32 [13,1] ", 0), 0u) << r0.out;
  const CommandResult rp = ps.Wait(seconds(20));
  EXPECT_EQ(rp.exit_code, 0) << rp.err;

  // An environment that does not fit the cluster is refused, naming what is wrong.
  const auto refused = [&](const std::string& env, const std::string& text) {
    SCOPED_TRACE(env);
    ExpectFailsWith(RunRill({"run", dir}, env), text);
  };
  refused("TRAINING_ROLE=TRAINER PADDLE_TRAINERS_NUM=2 PADDLE_TRAINER_ID=0",
          "TRAINING_ROLE is TRAINER, but PADDLE_PSERVERS_IP_PORT_LIST is not set");
  refused(paddle + " TRAINING_ROLE=TRAINER", "TRAINING_ROLE is TRAINER, but PADDLE_TRAINER_ID is not set");
  refused(paddle + " TRAINING_ROLE=TRAINER PADDLE_TRAINER_ID=2",
          "PADDLE_TRAINER_ID 2 is not below PADDLE_TRAINERS_NUM 2");
  refused(paddle + " TRAINING_ROLE=WORKER", "TRAINING_ROLE must be PSERVER or TRAINER, got 'WORKER'");
  refused("PADDLE_PSERVERS_IP_PORT_LIST=127.0.0.1:1 PADDLE_TRAINERS_NUM=2 TRAINING_ROLE=TRAINER PADDLE_TRAINER_ID=0",
          "PADDLE_PSERVERS_IP_PORT_LIST is 127.0.0.1:1, but " + dir + " was transpiled for the pservers " + endpoint);
  refused(
      "PADDLE_PSERVERS_IP_PORT_LIST=" + endpoint + " PADDLE_TRAINERS_NUM=3 TRAINING_ROLE=TRAINER PADDLE_TRAINER_ID=0",
      "PADDLE_TRAINERS_NUM is 3, but " + dir + " was transpiled for 2 trainers");
  refused(paddle + " TRAINING_ROLE=PSERVER POD_IP=127.0.0.2 PADDLE_PORT=" + port,
          "this pserver's endpoint 127.0.0.2:" + port + " (POD_IP:PADDLE_PORT) is not in PADDLE_PSERVERS_IP_PORT_LIST");
  refused("SLURM_PROCID=0 SLURM_NTASKS=4", "run it as 3 processes (mpirun -np 3), not 4");
}

TEST_F(DistCluster, ATrainerKilledMidRunFailsThePserverNamingIt) {
  const std::string dir = Transpile(2, 1);
  const std::string deadline = "RILL_RPC_DEADLINE_MS=1500";
  RillProcess ps(Pserver(dir, 0), deadline);
  RillProcess t0(Trainer(dir, 10000000), deadline + " RILL_TRAINER_ID=0");
  RillProcess t1(Trainer(dir, 10000000), deadline + " RILL_TRAINER_ID=1");
  // Once the pserver heard from trainer 1 (it trains), kill it.
  const CommandResult heard =
      StatusUntil({endpoints_[0], "--json"}, [](const std::string& out) { return PserversHeardFrom(out, 1); });
  ASSERT_TRUE(PserversHeardFrom(heard.out, 1)) << heard.out << heard.err;
  t1.Kill(SIGKILL);
  ExpectFailsWith(ps.Wait(seconds(20)), "no barrier within 1500 ms (RILL_RPC_DEADLINE_MS) from trainer 1");
  // The other trainer learns why from the pserver.
  ExpectFailsWith(t0.Wait(seconds(20)), "pserver " + endpoints_[0]);
}

TEST_F(DistCluster, APserverGoneFailsTheTrainerNamingItsEndpoint) {
  const std::string dir = Transpile(1, 2);
  const std::string deadline = "RILL_RPC_DEADLINE_MS=1500";
  RillProcess ps0(Pserver(dir, 0), deadline), ps1(Pserver(dir, 1), deadline);
  RillProcess trainer(Trainer(dir, 10000000), deadline);
  // Once the trainer trains against pserver 1, kill that pserver.
  const CommandResult heard =
      StatusUntil({endpoints_[1], "--json"}, [](const std::string& out) { return PserversHeardFrom(out, 0); });
  ASSERT_TRUE(PserversHeardFrom(heard.out, 0)) << heard.out << heard.err;
  ps1.Kill(SIGKILL);
  ExpectFailsWith(trainer.Wait(seconds(20)), "pserver " + endpoints_[1]);
}

TEST_F(DistCluster, NoPserverFailsTheTrainerWithinTheDeadline) {
  const std::string dir = Transpile(1, 1);
  RillProcess trainer(Trainer(dir, 1), "RILL_RPC_DEADLINE_MS=800");
  ExpectFailsWith(trainer.Wait(seconds(20)),
                  "pserver " + endpoints_[0] + ": GetVariable 'w': no pserver answered within 800 ms");
}

TEST_F(DistCluster, LaunchNamesTheFailedProcessAndStopsTheOthers) {
  const std::string dir = Transpile(2, 1);
  // Trainer 1's data does not exist: it fails at once; the pserver and trainer 0 would wait.
  fs::copy_file(dir_ + "/data/x.npy", dir + "/x_0.npy");
  const auto r = RunRill({"launch", dir, "--deadline-ms", "60000", "--", "--feed", "x=" + dir + "/x_{trainer}.npy",
                          "--feed", "y=" + dir_ + "/data/y.npy", "--iterations", "10"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("launch: trainer 1 failed (exit status 1); the others were stopped"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("x_1.npy"), std::string::npos) << "the log's tail says why: " << r.err;
}

TEST_F(DistCluster, TranspileAndLaunchRejectBadArguments) {
  const std::string train = dir_ + "/train.pbtxt", startup = kFitALine + "startup.pbtxt";
  auto r = RunRill({"transpile", train, "--trainers", "2", "-o", dir_ + "/x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: rill transpile PROGRAM --startup PROG"), std::string::npos) << r.err;
  r = RunRill({"transpile", train, "--startup", startup, "--trainers", "0", "--pservers", "h:1", "-o", dir_ + "/x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--trainers takes a positive integer, got '0'"), std::string::npos) << r.err;
  r = RunRill({"transpile", train, "--startup", startup, "--trainers", "1", "--pservers", "nohost", "-o", dir_ + "/x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("pserver endpoint 'nohost' is not HOST:PORT"), std::string::npos) << r.err;
  r = RunRill({"launch", dir_ + "/no_such_cluster"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot read '" + dir_ + "/no_such_cluster/cluster.txt' (written by `rill transpile`)"),
            std::string::npos)
      << r.err;
}

TEST_F(DistCluster, StatusReportsEachTrainerTheIterationAndTheBytes) {
  const std::string dir = Transpile(2, 1);
  const std::string e = endpoints_[0];
  RillProcess ps(Pserver(dir, 0), "RILL_RPC_DEADLINE_MS=60000");
  CommandResult r = StatusUntil({e}, "pserver " + e);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pserver " + e + ": iteration 0, up "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trainers: 0 of 2 connected, 0 at the barrier, 0 completed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trainer 1: not connected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parameters: "), std::string::npos) << r.out;
  // Trainer 0 alone: it pulls the parameters, sends its gradients and waits at the
  // barrier for trainer 1.
  RillProcess t0(Trainer(dir, 1), "RILL_RPC_DEADLINE_MS=60000 RILL_TRAINER_ID=0");
  r = StatusUntil({dir}, "trainer 0: waiting at the barrier of iteration 1");  // by the cluster's directory
  ASSERT_NE(r.out.find("trainer 0: waiting at the barrier of iteration 1"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("trainers: 1 of 2 connected, 1 at the barrier, 0 completed"), std::string::npos) << r.out;
  // fit_a_line's parameters: w [13, 1] and b [1], float32: 56 bytes each way so far.
  EXPECT_NE(r.out.find("tensor bytes: 56 B in (gradients), 56 B out (parameters)"), std::string::npos) << r.out;
  r = RunRill({"status", e, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"endpoint\":\"" + e + "\",\"fanin\":2,", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("{\"trainer_id\":0,\"state\":\"AT_BARRIER\",\"iteration\":\"1\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{\"trainer_id\":1,\"state\":\"NOT_CONNECTED\""), std::string::npos) << r.out;
  RillProcess t1(Trainer(dir, 1), "RILL_RPC_DEADLINE_MS=60000 RILL_TRAINER_ID=1");
  ASSERT_EQ(t0.Wait(seconds(60)).exit_code, 0);
  ASSERT_EQ(t1.Wait(seconds(60)).exit_code, 0);
  ASSERT_EQ(ps.Wait(seconds(20)).exit_code, 0);
  // The pserver is gone: an error naming it, within the deadline given.
  r = RunRill({"status", e, "--deadline-ms", "300"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("rill status: error: pserver " + e + ": "), std::string::npos) << r.err;
}

// `rill status` asks once: a closed port and a listener that is no pserver are said at
// once, whatever the deadline (a wait for the 10-minute deadline would time the test out).
TEST(DistStatus, AClosedPortOrSomethingElseListeningIsSaidAtOnce) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string endpoint = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  // Bound but not listening: connections are refused.
  CommandResult r = RunRill({"status", endpoint, "--deadline-ms", "600000"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("pserver " + endpoint + ": connection refused (nothing listens there)"), std::string::npos)
      << r.err;
  // Listening, answering every connection with an HTTP/1 error and closing it.
  ASSERT_EQ(listen(listener, 16), 0);
  std::thread server([listener] {
    for (int c; (c = accept(listener, nullptr, nullptr)) >= 0; close(c)) {
      const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
      static_cast<void>(write(c, reply, sizeof reply - 1));
    }
  });
  r = RunRill({"status", endpoint, "--deadline-ms", "600000"});
  shutdown(listener, SHUT_RDWR);
  server.join();
  close(listener);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("pserver " + endpoint + ": not a pserver (it does not answer as a gRPC server: "),
            std::string::npos)
      << r.err;
}

TEST_F(DistCluster, StatusCarriesTheTokenAndRejectsBadArguments) {
  const std::string dir = Transpile(1, 1);
  const std::string e = endpoints_[0];
  RillProcess ps(Pserver(dir, 0), "RILL_RPC_DEADLINE_MS=60000 RILL_DIST_TOKEN=s3cret");
  CommandResult r = StatusUntil({e}, "trainer 0: not connected", "RILL_DIST_TOKEN=s3cret");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Global options go anywhere; the rest is the command's.
  r = RunRill({"--log-level", "error", "status", "--plugins=core,dist_grpc", e}, "RILL_DIST_TOKEN=s3cret");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("trainer 0: not connected"), std::string::npos) << r.out;
  r = RunRill({"--help"});
  EXPECT_NE(r.out.find("COMMANDS FROM PLUGINS:\n  status     HOST:PORT...|DIR [--json]"), std::string::npos) << r.out;
  r = RunRill({"status", e});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("requires the shared token (RILL_DIST_TOKEN); the call carried none"), std::string::npos)
      << r.err;
  for (const auto& [args, text] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"status"}, "no pserver given"},
           {{"status", "nohost"}, "'nohost' is neither HOST:PORT nor a transpiled cluster's directory"},
           {{"status", e, "--bogus"}, "unknown option '--bogus'"},
           {{"status", e, "--deadline-ms", "soon"},
            "--deadline-ms takes a positive number of milliseconds, got 'soon'"},
           {{"status", dir_}, "is a directory without a cluster.txt"},
           {{"status", "127.0.0.1:99999"}, "endpoint '127.0.0.1:99999': port '99999' is not in 1..65535"}}) {
    r = RunRill(args);
    EXPECT_EQ(r.exit_code, 2) << text;
    EXPECT_EQ(r.err.rfind("rill status: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  }
  // Without the plugin that provides it, `status` is an unknown command, said so.
  r = RunRill({"--plugins", "math", "status", e});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'status': not one of rill's, and no plugin loaded (core, math) provides it"),
            std::string::npos)
      << r.err;
  ps.Kill(SIGKILL);
}

TEST_F(DistCluster, TlsAndTheSharedTokenAreEnforced) {
  if (std::system("command -v openssl >/dev/null") != 0)
    GTEST_SKIP() << "openssl is not installed: no certificate to test TLS with";
  const std::string key = dir_ + "/key.pem", cert = dir_ + "/cert.pem";
  const std::string make_cert =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext "
      "subjectAltName=IP:127.0.0.1 -keyout " +
      key + " -out " + cert + " 2>/dev/null";
  ASSERT_EQ(std::system(make_cert.c_str()), 0);
  const std::string dir = Transpile(1, 1);
  // A TLS handshake under ASan on a loaded 2-core machine can take seconds: the accepted
  // trainer and the pserver get room (a CI run saw its first call cut off at 3 s).
  const std::string secure = "RILL_RPC_DEADLINE_MS=15000 RILL_DIST_TOKEN=s3cret";
  RillProcess ps(Pserver(dir, 0), secure + " RILL_TLS_CERT=" + cert + " RILL_TLS_KEY=" + key);
  // Without TLS, then without the token: refused (the pserver keeps serving).
  RillProcess plain(Trainer(dir, 1), "RILL_RPC_DEADLINE_MS=1500 RILL_DIST_TOKEN=s3cret");
  ExpectFailsWith(plain.Wait(seconds(20)), "pserver " + endpoints_[0]);
  RillProcess no_token(Trainer(dir, 1), "RILL_RPC_DEADLINE_MS=3000 RILL_TLS_CA=" + cert);
  ExpectFailsWith(no_token.Wait(seconds(20)), "requires the shared token (RILL_DIST_TOKEN); the call carried none");
  RillProcess wrong_token(Trainer(dir, 1), "RILL_RPC_DEADLINE_MS=3000 RILL_DIST_TOKEN=guess RILL_TLS_CA=" + cert);
  ExpectFailsWith(wrong_token.Wait(seconds(20)),
                  "requires the shared token (RILL_DIST_TOKEN); the call's token is not that one");
  // A trainer that does not trust the pserver's certificate says so (it waited out the
  // deadline and reported "no pserver answered").
  const std::string other_key = dir_ + "/other_key.pem", other_cert = dir_ + "/other_cert.pem";
  ASSERT_EQ(std::system(("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -keyout " + other_key +
                         " -out " + other_cert + " 2>/dev/null")
                            .c_str()),
            0);
  RillProcess untrusting(Trainer(dir, 1), "RILL_RPC_DEADLINE_MS=1500 RILL_DIST_TOKEN=s3cret RILL_TLS_CA=" + other_cert);
  ExpectFailsWith(untrusting.Wait(seconds(20)),
                  "TLS with " + endpoints_[0] + " failed: the pserver's certificate is not trusted: ");
  // TLS files are checked when the pserver starts, naming the file at fault.
  RillProcess mismatched(Pserver(dir, 0), secure + " RILL_TLS_CERT=" + cert + " RILL_TLS_KEY=" + other_key);
  ExpectFailsWith(mismatched.Wait(seconds(20)),
                  "RILL_TLS_KEY '" + other_key + "' is not the key of the certificate in RILL_TLS_CERT '" + cert + "'");
  RillProcess not_pem(Pserver(dir, 0), secure + " RILL_TLS_CERT=" + key + " RILL_TLS_KEY=" + key);
  ExpectFailsWith(not_pem.Wait(seconds(20)), "RILL_TLS_CERT '" + key + "': no PEM certificate in it");
  RillProcess no_ca(Trainer(dir, 1), "RILL_RPC_DEADLINE_MS=1500 RILL_TLS_CA=" + dir_ + "/missing.pem");
  ExpectFailsWith(no_ca.Wait(seconds(20)),
                  "RILL_TLS_CA '" + dir_ + "/missing.pem': cannot read it (No such file or directory)");
  // `rill status` takes the same channel: TLS trusting the certificate, and the token.
  const CommandResult status =
      StatusUntil({endpoints_[0]}, "trainer 0: not connected", secure + " RILL_TLS_CA=" + cert);
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("large tensors travel by messages"), std::string::npos) << status.out;  // TLS: no TCP path
  RillProcess trainer(Trainer(dir, 5), secure + " RILL_TLS_CA=" + cert);
  const CommandResult r = trainer.Wait(seconds(30));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ps.Wait(seconds(20)).exit_code, 0);
}

}  // namespace
}  // namespace rill::test
