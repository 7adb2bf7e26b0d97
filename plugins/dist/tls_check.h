// plugins/dist/tls_check.h — TLS settings checked, and TLS failures explained, with
// OpenSSL, where gRPC reports only that a server did not start or a call did not connect.
//
// Contract:
//  - CheckServerTls / CheckClientTls throw std::runtime_error naming the setting
//    (RILL_TLS_CERT, RILL_TLS_KEY, RILL_TLS_CA), its file and what is wrong with it: not
//    readable, not PEM, no certificate or key in it, or a key that does not belong to the
//    certificate. They return normally exactly when gRPC gets usable files.
//  - ProbeTls connects to `endpoint` (HOST:PORT) and runs the handshake a trainer would,
//    trusting `ca_file` and checking the certificate names HOST. It returns "" when the
//    handshake succeeds, else why not: nothing listening, no TLS spoken there, or the
//    certificate refused, with OpenSSL's reason. It waits at most `timeout`.
#ifndef RILL_PLUGINS_DIST_PS_TLS_CHECK_H_
#define RILL_PLUGINS_DIST_PS_TLS_CHECK_H_

#include <chrono>
#include <string>

namespace rill::dist {

void CheckServerTls(const std::string& cert_file, const std::string& key_file);
void CheckClientTls(const std::string& ca_file);
std::string ProbeTls(const std::string& endpoint, const std::string& ca_file, std::chrono::milliseconds timeout);

}  // namespace rill::dist

#endif  // RILL_PLUGINS_DIST_PS_TLS_CHECK_H_
