// An Agent with its runtimes and Server, put together the way main() does
// (NodeBackends for the tree the options name, unless the test brings its
// own NodeIo), for tests that talk to a real server on loopback.
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "agent/agent.h"
#include "agent/backends.h"
#include "agent/counters_runtime.h"
#include "agent/probe_runtime.h"
#include "agent/server.h"

namespace roced::agent {

// An Agent on the fixture tree and nothing else (no runtimes, no config),
// for tests of the Server's own start-up and listeners.
class FixtureAgent {
 public:
  FixtureAgent() : backends_(Paths(), /*use_verbs=*/false), agent_(Options(backends_)) {}
  Agent* get() { return &agent_; }

 private:
  static hal::Paths Paths() {
    hal::Paths p;
    p.sysfs = std::string(ROCED_FIXTURES) + "/sysfs";
    return p;
  }
  static AgentOptions Options(const NodeBackends& backends) {
    AgentOptions opts;
    opts.paths = Paths();
    opts.use_netlink = false;
    opts.backends = backends.agent();
    return opts;
  }
  NodeBackends backends_;
  Agent agent_;
};

class ComposedAgent {
 public:
  ComposedAgent(AgentOptions options, ServerOptions server, ProbeRuntimeOptions probes = {},
                CountersRuntimeOptions counters = {})
      : backends_(options.paths, /*use_verbs=*/false) {
    if (options.backends.node_io == nullptr) options.backends = backends_.agent();
    if (counters.paths.sysfs.empty() || counters.paths.sysfs == hal::Paths().sysfs) counters.paths = options.paths;
    if (options.registry == nullptr) options.registry = std::make_shared<prometheus::Registry>();
    agent_ = std::make_unique<Agent>(options);
    counters_ = std::make_unique<CountersRuntime>(agent_.get(), counters);
    probes.registry = options.registry.get();
    probes.sysfs_root = options.paths.sysfs;
    probes_ = std::make_unique<ProbeRuntime>(agent_.get(), probes);
    server_ = std::make_unique<Server>(
        ServedParts{agent_.get(), counters_.get(), probes_.get(), options.registry}, server);
  }
  ~ComposedAgent() { Stop(); }

  // Loads the config (when the options name one), starts the agent, the
  // runtimes and the server.
  absl::Status Start(bool load_config = true) {
    if (load_config) {
      if (absl::Status s = agent_->LoadConfig(); !s.ok()) return s;
    }
    agent_->Start();
    counters_->Start();
    probes_->Start();
    return server_->Start();
  }
  void Stop(absl::Duration grace = absl::Seconds(1)) {
    if (stopped_) return;
    stopped_ = true;
    server_->Shutdown(grace);
    probes_->Stop();
    counters_->Stop();
    agent_->Stop();
  }

  Agent* agent() const { return agent_.get(); }
  Server* server() const { return server_.get(); }
  ProbeRuntime* probes() const { return probes_.get(); }
  CountersRuntime* counters() const { return counters_.get(); }

 private:
  NodeBackends backends_;
  std::unique_ptr<Agent> agent_;
  std::unique_ptr<CountersRuntime> counters_;
  std::unique_ptr<ProbeRuntime> probes_;
  std::unique_ptr<Server> server_;
  bool stopped_ = false;
};

}  // namespace roced::agent
