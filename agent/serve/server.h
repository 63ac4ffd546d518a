// Serves the agent's parts: two gRPC servers, one for TCP and one for the
// unix socket, each with its own threads (both with grpc.health.v1 and
// server reflection) and the Prometheus endpoint. It
// builds nothing it serves: main() (or a test) makes the Agent and the
// runtimes and hands them over; they must outlive the Server.
#pragma once

#include <grpcpp/server_builder.h>

#include <array>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "access/grpc_tls.h"
#include "access/policy.h"
#include "access/tls_files.h"
#include "access/tls_mirror.h"
#include "agent/core/agent.h"
#include "agent/api/agent_service.h"
#include "agent/api/audit_log.h"
#include "agent/api/call_limits.h"
#include "agent/api/gate.h"
#include "agent/api/health_service.h"
#include "agent/serve/tcp_listener.h"
#include "agent/serve/unix_listener.h"
#include "agent/runtimes/confirm_guard.h"
#include "agent/runtimes/counters_runtime.h"
#include "agent/runtimes/lldp_runtime.h"
#include "agent/runtimes/mesh_runtime.h"
#include "agent/serve/metrics_endpoint.h"
#include "agent/runtimes/probe_runtime.h"
#include "metrics/node_collector.h"
#include "model/defaults.h"
#include "prometheus/collectable.h"
#include "prometheus/registry.h"

namespace roced::agent {

// The gRPC server's bounds: whatever callers send, the agent's memory and
// threads stay within these (the agent itself needs ~20 MB).
//
// The largest request taken. A NodeConfig at every cap of
// model/config_limits.h (256 interfaces with full QoS, 1024 peers with the
// longest names and addresses) encodes to well under 1 MiB; gRPC refuses a
// larger message (RESOURCE_EXHAUSTED) before it is parsed.
inline constexpr int kMaxReceiveMessageBytes = 1 << 20;
// Threads serving calls at once on the TCP server, over every connection.
// WatchState streams hold one each (at most EventBus::kMaxSubscribers, 64),
// RunProbe one for a probe's run (at most probes.max_concurrent, 64, run at
// once; more are refused at once), unary calls a few milliseconds. 256
// covers those with room for bursts; past it gRPC answers
// RESOURCE_EXHAUSTED ("Server Threadpool Exhausted") instead of starting
// more threads.
inline constexpr int kMaxServerThreads = 256;
// The unix socket and its health service are a second gRPC server with
// threads of their own: nothing a TCP caller does can take them (a TCP
// caller stalling every TCP thread left `rocectl --socket` without an
// answer). Local callers are root, the socket's group and, when the access
// policy gives them a role, other local users. 128: every WatchState stream
// the event bus allows (64) with as many threads again for other calls.
inline constexpr int kMaxUnixServerThreads = 128;
// Calls in flight from one TCP identity (a certificate's first SAN, or a
// plaintext host under --insecure), counted from when the gate knows the
// caller until gRPC has sent the response: beyond, RESOURCE_EXHAUSTED
// before the handler runs. One identity never holds more than an eighth of
// the TCP threads.
inline constexpr int kMaxCallsPerIdentity = 32;
// Calls in flight over TCP past which the gate refuses every TCP call
// (RESOURCE_EXHAUSTED): the last 64 of the 256 threads stay for gRPC's
// pollers, health checks and reflection.
inline constexpr int kMaxTcpCalls = 192;
// A send (a streamed message, a unary response) that waits this long for
// the client's flow-control window is cancelled: a client that stops
// reading frees its threads after this, on both servers.
inline constexpr absl::Duration kMaxSendStall = absl::Seconds(20);
// Concurrent calls on one connection. 100 is HTTP/2's recommended minimum
// (RFC 9113 section 6.5.2): one client can hold every WatchState stream
// and still make calls, while one connection cannot take every thread.
inline constexpr int kMaxConcurrentStreamsPerConnection = 100;
// The server pings a connection quiet for 2 minutes and drops it when no
// answer comes within 20 s: a vanished client (rebooted controller, cut
// link) does not hold its streams and threads until TCP gives up (hours).
inline constexpr absl::Duration kKeepaliveTime = absl::Minutes(2);
inline constexpr absl::Duration kKeepaliveTimeout = absl::Seconds(20);
// Clients may ping every minute when no call is open (gRPC's default is 5
// minutes); a client pinging faster is told to go away after 2 strikes, so
// pings cannot be used to keep the server busy.
inline constexpr absl::Duration kMinClientPingInterval = absl::Minutes(1);
inline constexpr int kMaxPingStrikes = 2;
// A connection with no call for 15 minutes is closed (rocectl and
// controllers reconnect in milliseconds when they need to).
inline constexpr absl::Duration kMaxConnectionIdle = absl::Minutes(15);
// A connection is told to go away after an hour, and closed 5 minutes
// later: enough for any unary call or probe run to finish; a WatchState
// stream then ends (UNAVAILABLE) and its client re-subscribes, getting the
// full state first. Bounds how long one connection can pin anything.
inline constexpr absl::Duration kMaxConnectionAge = absl::Hours(1);
inline constexpr absl::Duration kMaxConnectionAgeGrace = absl::Minutes(5);

struct ServerOptions {
  // host:port; port 0 picks a free port (see grpc_port()). Empty: no TCP.
  // TCP needs `tls` (mutual TLS) or `insecure`.
  std::string grpc_listen = model::defaults::kGrpcListen;
  // The TCP listener's certificate and key, and the CA client certificates
  // must chain to (files reloaded when they change). roced's own command
  // line gives the copies of `tls_mirror` here, never the operator's files
  // (gRPC re-reads these unbounded; access/tls_mirror.h).
  access::TlsFiles tls;
  // Keeps those copies current while the server runs (null: `tls` are read
  // as they are, as the tests' own files are).
  std::shared_ptr<access::TlsMirror> tls_mirror;
  // How often those files are checked for changes.
  unsigned tls_reload_interval_seconds = access::kTlsReloadIntervalSeconds;
  // Plaintext TCP with no authentication: callers get policy.insecure.
  // Only on a loopback address unless insecure_allow_remote.
  bool insecure = false;
  bool insecure_allow_remote = false;
  // gRPC server reflection (on every listener: gRPC enables it per
  // process). Off by default.
  bool reflection = false;
  // Who gets which role (see access/policy.h).
  access::AccessPolicy policy;
  // Unix socket path; empty: none. Its directory is created (0755) and a
  // stale socket file is replaced. Mode 0660 (0666 when
  // policy.socket_other grants anything), group `socket_group`.
  std::string socket_path = model::defaults::kSocketPath;
  // Group name or number owning the socket; its members and root get
  // policy.socket_group. Empty: root's group.
  std::string socket_group;
  // The audit log (JSON lines); empty: none.
  std::string audit_log;
  // host:port for /metrics; port 0 picks a free port. Empty: no endpoint.
  std::string metrics_listen = model::defaults::kMetricsListen;
  // TLS and basic authentication for /metrics (--web.config.file); the
  // default is plain HTTP without authentication.
  WebConfig metrics_web_config;
  // The bounds on calls in flight and on a stalled send (tests shorten
  // the stall).
  CallLimitOptions call_limits{kMaxCallsPerIdentity, kMaxTcpCalls, kMaxSendStall};
};

// What the Server serves. Not owned.
struct ServedParts {
  Agent* agent = nullptr;
  CountersRuntime* counters = nullptr;
  ProbeRuntime* probes = nullptr;
  // The agent's and the runtimes' metric families, exposed on /metrics.
  std::shared_ptr<prometheus::Registry> registry;
  // The LLDP listener (null: none, as on a fixture tree).
  LldpRuntime* lldp = nullptr;
  // The fleet mesh (null: off).
  MeshRuntime* mesh = nullptr;
  // Judges configs applied with a confirm policy (null: such applies are
  // refused).
  ConfirmGuard* confirm = nullptr;
};

class Server {
 public:
  Server(ServedParts parts, ServerOptions options);
  ~Server();

  // The checks Start() makes that need no socket: what TCP may serve (TLS
  // files or --insecure), the socket group, the reflection library (the
  // metrics web config is read with the flags). The daemon runs them before it reads its config or
  // touches the node, so a bad flag changes nothing. Errors name the flag.
  absl::Status Preflight() const;
  // Binds everything. On failure (address in use, bad address, unwritable
  // socket dir) nothing is left listening and the error names the address.
  absl::Status Start();
  // Ends watch streams (WatchState, health Watch) and running probes (so RunProbe calls in flight do
  // not hold up the shutdown), stops both gRPC servers (waiting up to `grace` for calls
  // in flight) and the metrics endpoint.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }

 private:
  // What TCP may serve: TLS or --insecure (loopback unless allowed), the
  // certificate files valid. Errors name the flags.
  absl::Status CheckTcpSecurity() const;
  absl::Status StartGrpc();
  // The TCP listener and its server (with --grpc-listen).
  absl::Status StartTcp();
  // The unix socket's own server (none without --socket).
  absl::Status StartUnix();
  // What the "grpc" component says while nothing is wrong.
  std::string Listening() const;
  // The "grpc" component from both of its sources: the call limits
  // refusing calls, the TCP listener failing to accept (each with why, or
  // ok). Healthy when neither reports a problem.
  enum class GrpcProblem { kCallLimits = 0, kListener = 1 };
  void SetGrpcProblem(GrpcProblem source, bool ok, const std::string& why);
  absl::Status StartMetrics();

  Agent* const agent_;
  CountersRuntime* const counters_;
  ProbeRuntime* const probes_;
  LldpRuntime* const lldp_;
  const std::shared_ptr<prometheus::Registry> registry_;
  ServerOptions options_;
  UnixPeers unix_peers_;
  std::unique_ptr<UnixListener> unix_;
  AuditLog audit_;
  Gate gate_;
  AgentService agent_service_;
  ProbePeerService peer_service_;
  // The TCP server's and the unix server's: a TCP caller cannot take the
  // unix socket's health Watch slots.
  HealthService health_;
  HealthService unix_health_;
  std::unique_ptr<CallLimits> limits_;
  // The TCP listener and the acceptor it hands connections to.
  std::unique_ptr<TcpListener> tcp_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> tcp_acceptor_;
  std::mutex grpc_health_mu_;
  std::array<std::string, 2> grpc_problems_ ABSL_GUARDED_BY(grpc_health_mu_);
  std::string listening_ ABSL_GUARDED_BY(grpc_health_mu_);  // Listening(), once started
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<grpc::Server> unix_grpc_;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint_;
  std::shared_ptr<metrics::NodeCollector> collector_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
};

// Sets the bounds above on a ServerBuilder (Server::Start does), with a
// thread budget of `max_threads`.
void ApplyServerLimits(grpc::ServerBuilder* builder, int max_threads = kMaxServerThreads);

// Whether a listen address is on loopback ("127.0.0.1:7471", "[::1]:7471",
// "localhost:7471").
bool IsLoopbackListen(const std::string& listen);

// Translates a listen address to civetweb's form: "[::]:9471" listens on
// every address ("+9471": IPv4 and IPv6, or IPv4 only where civetweb has
// no IPv6, see MetricsEndpoint::CanListenOnIpv6); others pass through.
std::string CivetListenAddress(const std::string& listen);

}  // namespace roced::agent
