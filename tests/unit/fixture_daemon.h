// DaemonOptions for an agent on the fixture tree (tests/fixtures/sysfs): no
// netlink, no verbs, no listener until the test opens the ones it talks to,
// the config and state in `dir` when given. The tests that talk to a whole
// agent run it as main() does, through agent::Daemon.
#pragma once

#include <string>

#include "agent/daemon.h"
#include "agent/daemon_options.h"

namespace roced::agent {

inline DaemonOptions FixtureDaemonOptions(const std::string& dir = "") {
  DaemonOptions o;
  o.paths.sysfs = std::string(ROCED_FIXTURES) + "/sysfs";
  o.use_verbs = false;
  o.agent.use_netlink = false;
  if (!dir.empty()) {
    o.agent.config_path = dir + "/roced.yaml";
    o.agent.state_dir = dir;
  }
  o.server.grpc_listen = "";
  o.server.socket_path = "";
  o.server.metrics_listen = "";
  return o;
}

}  // namespace roced::agent
