#include "tls_certs.h"

#include <fstream>
#include <stdexcept>

namespace redbloom::testing {

TestCertificates::TestCertificates() {
  MakeCa("ca");
  MakeCa("other-ca");
  // clientAuth too: a cluster node shows its server certificate as a client
  // on the cluster bus, where client certificates are always required.
  const std::string server_ext = std::string("subjectAltName=IP:127.0.0.1,IP:::1,DNS:") +
                                 kServerName + "\nextendedKeyUsage=serverAuth,clientAuth\n";
  const std::string client_ext = "extendedKeyUsage=clientAuth\n";
  MakeLeaf("server", "ca", kServerName, server_ext, 2);
  MakeLeaf("client", "ca", "redbloom-test-client", client_ext, 3);
  MakeLeaf("other-server", "other-ca", kServerName, server_ext, 4);
  MakeLeaf("other-client", "other-ca", "redbloom-test-client", client_ext, 5);
}

std::vector<std::string> TestCertificates::ServerArgs(int tls_port, bool auth_clients,
                                                      bool other) const {
  return {"--tls-port",         std::to_string(tls_port),
          "--tls-cert-file",    other ? other_server_cert() : server_cert(),
          "--tls-key-file",     other ? other_server_key() : server_key(),
          "--tls-ca-cert-file", ca(),
          "--tls-auth-clients", auth_clients ? "yes" : "no"};
}

void TestCertificates::Openssl(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"/usr/bin/env", "openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult r = RunCommand(argv);
  if (r.exit_code != 0) {
    std::string line;
    for (const auto& a : args) line += " " + a;
    throw std::runtime_error("openssl" + line + " failed (is openssl installed?): " + r.err);
  }
}

void TestCertificates::MakeCa(const std::string& name) const {
  Openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
           "-keyout", Path(name + ".key"), "-out", Path(name + ".crt"), "-days", "2", "-subj",
           "/CN=redbloom test " + name});
}

void TestCertificates::MakeLeaf(const std::string& name, const std::string& ca,
                                const std::string& subject, const std::string& extensions,
                                int serial) const {
  const std::string ext = Path(name + ".ext");
  std::ofstream(ext) << extensions;
  Openssl({"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
           "-keyout", Path(name + ".key"), "-out", Path(name + ".csr"), "-subj", "/CN=" + subject});
  Openssl({"x509", "-req", "-in", Path(name + ".csr"), "-CA", Path(ca + ".crt"), "-CAkey",
           Path(ca + ".key"), "-set_serial", std::to_string(serial), "-days", "2", "-out",
           Path(name + ".crt"), "-extfile", ext});
}

}  // namespace redbloom::testing
