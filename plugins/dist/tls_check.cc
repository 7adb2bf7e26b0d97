#include "tls_check.h"

#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace rill::dist {
namespace {

template <class T, void (*Free)(T*)> struct Freer {
  void operator()(T* p) const { Free(p); }
};
using Bio = std::unique_ptr<BIO, Freer<BIO, BIO_free_all>>;
using X509Ptr = std::unique_ptr<X509, Freer<X509, X509_free>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Freer<EVP_PKEY, EVP_PKEY_free>>;
using SslCtx = std::unique_ptr<SSL_CTX, Freer<SSL_CTX, SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, Freer<SSL, SSL_free>>;

// OpenSSL's most recent error as text (its queue is cleared), or `fallback`.
std::string OpenSslReason(const char* fallback) {
  const unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e == 0) return fallback;
  const char* reason = ERR_reason_error_string(e);
  return reason != nullptr ? reason : fallback;
}

// The file, opened for PEM reading; throws naming the setting when it cannot be read.
Bio Open(const char* setting, const std::string& path) {
  Bio bio(BIO_new_file(path.c_str(), "r"));
  if (!bio) {
    ERR_clear_error();
    throw std::runtime_error(std::string(setting) + " '" + path + "': cannot read it (" + std::strerror(errno) + ")");
  }
  return bio;
}

X509Ptr ReadCertificate(const char* setting, const std::string& path) {
  Bio bio = Open(setting, path);
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    throw std::runtime_error(std::string(setting) + " '" + path + "': no PEM certificate in it (" +
                             OpenSslReason("unreadable") + ")");
  }
  return cert;
}

}  // namespace

void CheckServerTls(const std::string& cert_file, const std::string& key_file) {
  X509Ptr cert = ReadCertificate("RILL_TLS_CERT", cert_file);
  Bio bio = Open("RILL_TLS_KEY", key_file);
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    throw std::runtime_error("RILL_TLS_KEY '" + key_file + "': no unencrypted PEM private key in it (" +
                             OpenSslReason("unreadable") + ")");
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    throw std::runtime_error("RILL_TLS_KEY '" + key_file + "' is not the key of the certificate in RILL_TLS_CERT '" +
                             cert_file + "'");
  }
}

void CheckClientTls(const std::string& ca_file) { ReadCertificate("RILL_TLS_CA", ca_file); }

std::string ProbeTls(const std::string& endpoint, const std::string& ca_file, std::chrono::milliseconds timeout) {
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos) return "'" + endpoint + "' is not HOST:PORT";
  std::string host = endpoint.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port = endpoint.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return "cannot resolve '" + host + "' (" + gai_strerror(rc) + ")";
  }
  const int fd = socket(found->ai_family, SOCK_STREAM, 0);
  const int connected = fd >= 0 ? connect(fd, found->ai_addr, found->ai_addrlen) : -1;
  const int connect_errno = errno;
  freeaddrinfo(found);
  if (connected != 0) {
    if (fd >= 0) close(fd);
    return "cannot connect (" + std::string(std::strerror(connect_errno)) + ")";
  }
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

  std::string why;
  SslCtx ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx || SSL_CTX_load_verify_locations(ctx.get(), ca_file.c_str(), nullptr) != 1) {
    why = "RILL_TLS_CA '" + ca_file + "' cannot be loaded (" + OpenSslReason("unreadable") + ")";
  } else {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    SslPtr ssl(SSL_new(ctx.get()));
    SSL_set_fd(ssl.get(), fd);
    SSL_set1_host(ssl.get(), host.c_str());
    // gRPC speaks HTTP/2 over TLS: offer it, as a trainer does.
    static const unsigned char kH2[] = {2, 'h', '2'};
    SSL_set_alpn_protos(ssl.get(), kH2, sizeof(kH2));
    if (SSL_connect(ssl.get()) != 1) {
      const long verify = SSL_get_verify_result(ssl.get());
      if (verify != X509_V_OK) {
        why = std::string("the pserver's certificate is not trusted: ") + X509_verify_cert_error_string(verify) +
              " (RILL_TLS_CA '" + ca_file + "')";
        ERR_clear_error();
      } else {
        why = "the TLS handshake failed: " + OpenSslReason("the connection closed during the handshake") +
              " (does the pserver serve TLS? it needs RILL_TLS_CERT and RILL_TLS_KEY)";
      }
    } else {
      SSL_shutdown(ssl.get());
    }
  }
  close(fd);
  return why;
}

}  // namespace rill::dist
