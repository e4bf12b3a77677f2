// Certificates for TLS tests, made with the openssl command in a temporary
// directory when a test runs: no key material is committed.
#ifndef REDBLOOM_TESTS_TLS_CERTS_H_
#define REDBLOOM_TESTS_TLS_CERTS_H_

#include <string>
#include <vector>

#include "test_util.h"

namespace redbloom::testing {

class TestCertificates {
 public:
  // The DNS name the server certificates hold besides 127.0.0.1 and ::1.
  static constexpr const char* kServerName = "redis.test";

  // Makes every file below (EC P-256 keys, valid for two days). Throws
  // std::runtime_error with openssl's output if it cannot.
  TestCertificates();

  const std::string& dir() const { return dir_.path(); }
  std::string ca() const { return Path("ca.crt"); }
  // Signed by ca(): SANs 127.0.0.1, ::1 and kServerName.
  std::string server_cert() const { return Path("server.crt"); }
  std::string server_key() const { return Path("server.key"); }
  // Signed by ca(), for mutual TLS.
  std::string client_cert() const { return Path("client.crt"); }
  std::string client_key() const { return Path("client.key"); }
  // Another CA, and a server and a client certificate it signed (the same
  // names as above): valid certificates that ca() does not vouch for.
  std::string other_ca() const { return Path("other-ca.crt"); }
  std::string other_server_cert() const { return Path("other-server.crt"); }
  std::string other_server_key() const { return Path("other-server.key"); }
  std::string other_client_cert() const { return Path("other-client.crt"); }
  std::string other_client_key() const { return Path("other-client.key"); }

  // redis-server arguments for a TLS port `tls_port` with the server
  // certificate of ca() (or of the other CA), requiring client certificates
  // signed by ca() when `auth_clients`.
  std::vector<std::string> ServerArgs(int tls_port, bool auth_clients, bool other = false) const;

 private:
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  void Openssl(const std::vector<std::string>& args) const;
  void MakeCa(const std::string& name) const;
  void MakeLeaf(const std::string& name, const std::string& ca, const std::string& subject,
                const std::string& extensions, int serial) const;

  TempDir dir_;
};

}  // namespace redbloom::testing

#endif  // REDBLOOM_TESTS_TLS_CERTS_H_
