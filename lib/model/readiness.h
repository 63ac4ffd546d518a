// Whether a node is ready: for traffic, and for the next batch of a rollout
// (a DaemonSet's readinessProbe, `rocectl rollout` to come). Read from the
// state the agent publishes (GetState), so the agent's /readyz and
// `rocectl ready` over GetState give the same answer from one rule.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "roced/v1/state.pb.h"

namespace roced::model {

struct ReadinessCheck {
  std::string name;    // "discovery", "state", "converged", "confirmed", "grpc"
  bool ok = false;
  std::string detail;  // why, in a line: what holds or what is wrong
};

struct Readiness {
  bool ready = false;  // every check ok
  std::vector<ReadinessCheck> checks;
};

// The checks, in this order:
//   discovery  the agent has found the node's RDMA devices (its "discovery"
//              component healthy);
//   state      its state directory (journal, accepted config) is usable
//              (the "state" component, when reported);
//   converged  the last reconcile found the node as the accepted config
//              wants it (enforce mode); passes with no config accepted and
//              in observe mode, where nothing is corrected; when failing,
//              names up to 3 fields not in sync;
//   confirmed  no provisional config awaits ConfirmConfig (or its rollback
//              at the deadline, relative to `now`); one judged by a
//              confirm policy names its gates that failed or still wait;
//   grpc       the gRPC API is not refusing calls for a limit (the "grpc"
//              component healthy: a caller holding its share of calls in
//              flight, or all of TCP's, makes it unhealthy with the limit
//              named, until its calls end).
Readiness ReadinessOf(const roced::v1::NodeState& state, absl::Time now);

// The Kubernetes /readyz form: "[+]name ok" or "[-]name failed: detail", a
// line each, then "readyz check passed" or "readyz check failed".
std::string ReadinessText(const Readiness& r);

}  // namespace roced::model
