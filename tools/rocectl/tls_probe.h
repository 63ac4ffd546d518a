// Why a TLS connection to an agent fails, in one line, for when gRPC only
// says "unavailable": rocectl makes the handshake itself with OpenSSL and
// reports what went wrong (the agent's certificate is not trusted by --ca
// or does not name the host; the agent refused ours, and the alert it
// sent).
#pragma once

#include <string>

#include "absl/time/time.h"
#include "access/tls_files.h"

namespace roced::ctl {

// "" when the handshake succeeds (the failure is elsewhere), else the
// reason. `host_port` is "host:port"; `server_name` overrides the name the
// certificate must carry (empty: the host).
std::string ExplainTlsFailure(const std::string& host_port, const access::TlsFiles& files,
                              const std::string& server_name, absl::Duration timeout);

}  // namespace roced::ctl
