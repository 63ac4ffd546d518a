// Wires the Agent to the outside: the gRPC server (TCP and unix socket, with
// grpc.health.v1 and server reflection) and the Prometheus endpoint. Used by
// main() and by tests that need a real server on loopback.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "agent/agent.h"
#include "agent/agent_service.h"
#include "agent/counters_runtime.h"
#include "agent/probe_runtime.h"
#include "metrics/node_collector.h"
#include "prometheus/exposer.h"

namespace roced::agent {

struct ServerOptions {
  // host:port; port 0 picks a free port (see grpc_port()). Empty: no TCP.
  std::string grpc_listen = "[::]:7471";
  // Unix socket path; empty: none. Its directory is created (0755) and a
  // stale socket file is replaced.
  std::string socket_path = "/run/roced/roced.sock";
  // host:port for /metrics; port 0 picks a free port. Empty: no endpoint.
  std::string metrics_listen = "[::]:9471";
  // RDMA probes (tests pass a fake endpoint factory here).
  ProbeRuntimeOptions probes;
};

class Server {
 public:
  Server(Agent* agent, ServerOptions options);
  ~Server();

  // Binds everything. On failure (address in use, bad address, unwritable
  // socket dir) nothing is left listening and the error names the address.
  absl::Status Start();
  // Ends watch streams, stops gRPC (waiting up to `grace` for calls in
  // flight) and the metrics endpoint.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }

 private:
  Agent* agent_;
  ServerOptions options_;
  AgentService agent_service_;
  ProbePeerService peer_service_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<metrics::NodeCollector> collector_;
  std::unique_ptr<CountersRuntime> counters_;
  std::unique_ptr<ProbeRuntime> probes_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
};

// Translates a listen address to civetweb's form: "[::]:9471" listens on
// every IPv4 and IPv6 address ("+9471"); others pass through.
std::string CivetListenAddress(const std::string& listen);

}  // namespace roced::agent
