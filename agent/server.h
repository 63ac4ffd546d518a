// Serves the agent's parts: the gRPC server (TCP and unix socket, with
// grpc.health.v1 and server reflection) and the Prometheus endpoint. It
// builds nothing it serves: main() (or a test) makes the Agent and the
// runtimes and hands them over; they must outlive the Server.
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
};

// What the Server serves. Not owned.
struct ServedParts {
  Agent* agent = nullptr;
  CountersRuntime* counters = nullptr;
  ProbeRuntime* probes = nullptr;
};

class Server {
 public:
  Server(ServedParts parts, ServerOptions options);
  ~Server();

  // Binds everything. On failure (address in use, bad address, unwritable
  // socket dir) nothing is left listening and the error names the address.
  absl::Status Start();
  // Ends watch streams and running probes (so RunProbe calls in flight do
  // not hold up the shutdown), stops gRPC (waiting up to `grace` for calls
  // in flight) and the metrics endpoint.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }

 private:
  Agent* const agent_;
  CountersRuntime* const counters_;
  ProbeRuntime* const probes_;
  ServerOptions options_;
  AgentService agent_service_;
  ProbePeerService peer_service_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<metrics::NodeCollector> collector_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
};

// Translates a listen address to civetweb's form: "[::]:9471" listens on
// every IPv4 and IPv6 address ("+9471"); others pass through.
std::string CivetListenAddress(const std::string& listen);

}  // namespace roced::agent
