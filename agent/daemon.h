// The composition root: one Daemon owns every part of a running agent and
// wires them, in the one order they start and the reverse they stop. main()
// runs one; so do the tests that talk to a whole agent over gRPC.
//
//   NodeBackends   the node's kernel surfaces (live or fixture), chosen once
//   registry       the Prometheus registry every part registers in
//   Agent          state, config lifecycle, discovery, reconcile
//   runtimes       counters, probes, LLDP (live kernel), mesh (when
//                  configured), the confirm guard (reads the other three)
//   Server         gRPC on TCP and the unix socket, /metrics
//
// Start, Stop and the accessors are for one thread (main's, a test's).
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/core/agent.h"
#include "agent/core/backends.h"
#include "agent/daemon_options.h"
#include "agent/runtimes/confirm_guard.h"
#include "agent/runtimes/counters_runtime.h"
#include "agent/runtimes/lldp_runtime.h"
#include "agent/runtimes/mesh_runtime.h"
#include "agent/runtimes/probe_runtime.h"
#include "agent/serve/server.h"
#include "prometheus/registry.h"

namespace roced::agent {

class Daemon {
 public:
  // Builds every part; nothing runs yet.
  explicit Daemon(DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Loads the config file (the start-up load: a bad file is an error and
  // nothing starts; with `load_config` false the agent starts without it),
  // then starts the agent, the runtimes and the server. On an error
  // everything started is stopped again; the message says what failed.
  absl::Status Start(bool load_config = true);
  // The server first (no new calls, `grace` for those in flight), then the
  // runtimes and the agent, newest first. Idempotent.
  void Stop(absl::Duration grace = absl::Seconds(5));

  Agent* agent() const { return agent_.get(); }
  CountersRuntime* counters() const { return counters_.get(); }
  ProbeRuntime* probes() const { return probes_.get(); }
  LldpRuntime* lldp() const { return lldp_.get(); }
  MeshRuntime* mesh() const { return mesh_.get(); }
  ConfirmGuard* confirm() const { return confirm_.get(); }
  Server* server() const { return server_.get(); }
  const DaemonOptions& options() const { return options_; }

 private:
  void StopRuntimes();

  DaemonOptions options_;
  const NodeBackends node_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<CountersRuntime> counters_;
  std::unique_ptr<ProbeRuntime> probes_;
  std::unique_ptr<LldpRuntime> lldp_;  // null off the live kernel
  std::unique_ptr<MeshRuntime> mesh_;
  std::unique_ptr<ConfirmGuard> confirm_;
  std::unique_ptr<Server> server_;
  bool started_ = false;
};

}  // namespace roced::agent
