#include "options.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tls_check.h"

namespace rill::dist {
namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

int64_t EnvInt(const char* name, int64_t fallback, int64_t min) {
  const char* v = Env(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end != '\0' || n < min) {
    throw std::runtime_error(std::string(name) + "='" + v + "': expected an integer >= " + std::to_string(min));
  }
  return n;
}

std::string ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string(what) + ": cannot read '" + path + "'");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TransportOptions TransportOptions::Resolve(int64_t deadline_ms_attr) {
  TransportOptions o;
  if (deadline_ms_attr > 0) o.deadline = std::chrono::milliseconds(deadline_ms_attr);
  o.deadline = std::chrono::milliseconds(EnvInt("RILL_RPC_DEADLINE_MS", o.deadline.count(), 1));
  if (const char* t = Env("RILL_DIST_TOKEN")) o.token = t;
  if (const char* i = Env("RILL_DIST_INSECURE")) {
    if (std::strcmp(i, "1") != 0 && std::strcmp(i, "0") != 0) {
      throw std::runtime_error(std::string("RILL_DIST_INSECURE='") + i + "': expected 1 or 0");
    }
    o.insecure = std::strcmp(i, "1") == 0;
  }
  if (const char* c = Env("RILL_TLS_CERT")) o.tls_cert_file = c;
  if (const char* k = Env("RILL_TLS_KEY")) o.tls_key_file = k;
  if (const char* a = Env("RILL_TLS_CA")) o.tls_ca_file = a;
  if (const char* d = Env("RILL_DATA_PATH")) {
    if (std::strcmp(d, "tcp") != 0 && std::strcmp(d, "message") != 0) {
      throw std::runtime_error(std::string("RILL_DATA_PATH='") + d + "': expected tcp or message");
    }
    o.tcp_data_path = std::strcmp(d, "tcp") == 0;
  }
  const int64_t port = EnvInt("RILL_DATA_PORT", 0, 0);
  if (port > 65535)
    throw std::runtime_error("RILL_DATA_PORT='" + std::to_string(port) + "': expected a port, 0 to 65535");
  o.data_port = static_cast<uint16_t>(port);
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    throw std::runtime_error("RILL_TLS_CERT and RILL_TLS_KEY go together: set both or neither");
  }
  return o;
}

std::shared_ptr<grpc::ChannelCredentials> TransportOptions::ChannelCredentials() const {
  if (tls_ca_file.empty()) return grpc::InsecureChannelCredentials();
  CheckClientTls(tls_ca_file);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadPem(tls_ca_file, "RILL_TLS_CA");
  return grpc::SslCredentials(ssl);
}

std::shared_ptr<grpc::ServerCredentials> TransportOptions::ServerCredentials() const {
  if (tls_cert_file.empty()) return grpc::InsecureServerCredentials();
  CheckServerTls(tls_cert_file, tls_key_file);
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({ReadPem(tls_key_file, "RILL_TLS_KEY"), ReadPem(tls_cert_file, "RILL_TLS_CERT")});
  return grpc::SslServerCredentials(ssl);
}

int32_t ResolveTrainerId(int64_t trainer_id_attr) {
  return static_cast<int32_t>(EnvInt("RILL_TRAINER_ID", trainer_id_attr < 0 ? -1 : trainer_id_attr, 0));
}

}  // namespace rill::dist
