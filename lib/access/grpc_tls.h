// gRPC credentials from certificate files, for the agent's TCP listener,
// its calls to peer agents, and rocectl. The files are watched: a renewed
// certificate, key or CA bundle takes effect within kTlsReloadInterval, on
// new connections, without a restart.
#pragma once

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "access/tls_files.h"

namespace roced::access {

// How often gRPC's certificate provider re-reads the files (a thread of its own
// that wakes that often; a shorter interval shows in bench/idle_cpu.sh).
inline constexpr unsigned kTlsReloadIntervalSeconds = 60;

// TLS for the agent's TCP listener: its certificate and key, and the CA that
// client certificates must chain to. A client without a certificate, with
// one the CA does not vouch for, or with an expired one, fails the
// handshake: no stream of an unauthenticated client reaches the server's
// threads (before, a cert-less client got a handler thread per call only
// to be answered UNAUTHENTICATED, and could stall those threads).
std::shared_ptr<grpc::ServerCredentials> ServerTlsCredentials(
    const TlsFiles& files, unsigned reload_interval_seconds = kTlsReloadIntervalSeconds);

// TLS for calls to an agent: the server's certificate must chain to
// `files.ca` and name the host called (DNS or IP SAN); the client
// certificate (cert/key) is sent when given.
std::shared_ptr<grpc::ChannelCredentials> ClientTlsCredentials(const TlsFiles& files);

}  // namespace roced::access
