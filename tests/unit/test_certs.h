// Certificates made by tests/tls/make_certs.sh with openssl, once per test
// process, in a temporary directory (see that script for what it makes).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "access/tls_files.h"
#include "test_util.h"

namespace roced::test_util {

inline const std::string& TestCertDir() {
  static const std::string* dir = [] {
    auto* d = new std::string(MakeTempDir("roced-certs"));
    const std::string cmd =
        std::string("bash ") + ROCED_SOURCE_DIR + "/tests/tls/make_certs.sh " + *d + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) std::abort();
    return d;
  }();
  return *dir;
}

inline std::string CertPath(const std::string& name) { return TestCertDir() + "/" + name; }

// NAME.crt/NAME.key with the trusted CA.
inline access::TlsFiles ClientFiles(const std::string& name, const std::string& ca = "ca") {
  return {CertPath(name + ".crt"), CertPath(name + ".key"), CertPath(ca + ".crt")};
}

}  // namespace roced::test_util
