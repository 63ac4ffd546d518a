// The one place every RPC passes before its handler runs: who the caller
// is (TLS client certificate, unix socket credentials, or a plaintext
// TCP caller under --insecure), whether its roles allow the method
// (access::MethodRules), whether a TCP caller is within its calls in
// flight (CallLimits), and the record of it: roced_api_requests_total
// for every call, the audit log for mutating ones and for every refusal.
//
// gRPC C++ server interceptors cannot refuse a call (they observe, they
// cannot answer in the handler's place), so the gate is a wrapper each
// handler is written inside:
//
//   return gate_->Serve(ctx, "/roced.v1.Agent/ApplyConfig",
//                       [&](const Caller& caller, AuditNote* note) { ... });
//
// A method the table does not know is refused; a test calls every method
// of both services' descriptors as every kind of caller.
#pragma once

#include <grpcpp/server_context.h>

#include <functional>
#include <memory>
#include <string>


#include "access/policy.h"
#include "agent/api/audit_log.h"
#include "agent/api/call_limits.h"
#include "agent/api/unix_peers.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace roced::agent {

struct Caller {
  enum class Transport { kTls, kUnix, kInsecure, kUnknown };
  Transport transport = Transport::kUnknown;
  // Who, for logs, audit and errors: the certificate's first SAN (or CN),
  // "unix uid 0 gid 0 pid 42", "insecure ipv4:127.0.0.1" (no port: one
  // plaintext host is one caller).
  std::string identity;
  access::RoleSet roles;
  // Not OK when the caller could not be identified (UNAUTHENTICATED).
  absl::Status identified;
};

absl::string_view TransportName(Caller::Transport t);

// What a handler adds to its audit record.
struct AuditNote {
  uint64_t generation = 0;
  std::string summary;
};

struct GateOptions {
  access::AccessPolicy policy;
  // Plaintext TCP callers are accepted (with policy.insecure roles).
  bool insecure = false;
  // The unix socket's group: its members and root get policy.socket_group.
  gid_t socket_group = 0;
};

class Gate {
 public:
  using Handler = std::function<grpc::Status(const Caller&, AuditNote*)>;

  // `unix_peers` (may be null: no socket) and `audit` must outlive the gate.
  Gate(GateOptions options, const UnixPeers* unix_peers, AuditLog* audit, prometheus::Registry* registry);

  // The unix socket's group (set before serving).
  void set_socket_group(gid_t group) { options_.socket_group = group; }
  // The bound on TCP callers' calls in flight (null: none). Set before
  // serving; must outlive the gate's calls.
  void set_call_limits(CallLimits* limits) { limits_ = limits; }

  // Who is calling on `context`.
  Caller Identify(const grpc::ServerContext& context) const;
  // The roles of a unix socket caller.
  access::RoleSet RolesOf(const UnixPeer& peer) const;

  // Identifies the caller, checks `method`, runs `handler` when allowed;
  // counts and audits the outcome either way.
  grpc::Status Serve(grpc::ServerContext* context, absl::string_view method, const Handler& handler);

 private:
  void Record(const Caller& caller, absl::string_view method, const grpc::Status& status, const AuditNote& note,
              bool mutating);

  GateOptions options_;
  const UnixPeers* unix_peers_;
  AuditLog* audit_;
  CallLimits* limits_ = nullptr;
  prometheus::Family<prometheus::Counter>* requests_ = nullptr;
};

// gRPC's name of a status code: "OK", "PERMISSION_DENIED", ...
absl::string_view CodeName(grpc::StatusCode code);

}  // namespace roced::agent
