// What a Daemon is built from: every part's options in one struct, made
// from the command line (DaemonOptionsFromFlags) or by a test that sets the
// fields it needs (a fixture tree, loopback ports, a fake RDMA engine).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "agent/flags.h"
#include "agent/runtimes/confirm_guard.h"
#include "agent/runtimes/counters_runtime.h"
#include "agent/runtimes/lldp_runtime.h"
#include "agent/runtimes/mesh_runtime.h"
#include "agent/runtimes/probe_runtime.h"
#include "agent/serve/server.h"
#include "hal/paths.h"

namespace roced::agent {

// Fields the Daemon fills from its own parts are said so; a test may set
// them to bring its own (a NodeIo, an endpoint factory).
struct DaemonOptions {
  // The node's roots: the NodeBackends (live kernel or fixture tree) are
  // chosen over them, and every part reads below them.
  hal::Paths paths;
  // Verbs (device contexts, the RDMA probe engine) on the live kernel.
  bool use_verbs = true;
  // A fixture tree's DCB state from files in this directory
  // (hal::DcbFixtureFiles) instead of DCB netlink; empty: DCB netlink.
  std::string dcb_fixture;
  // backends.node_io unset: the NodeBackends' (with everything else in
  // backends); registry unset: one made for the process; paths: `paths`.
  AgentOptions agent;
  // paths, netdev_stats and dcb from the node when netdev_stats is unset.
  CountersRuntimeOptions counters;
  // factory unset: the node's endpoints; registry and roots: the Daemon's.
  ProbeRuntimeOptions probes;
  // LLDP runs on the live kernel only (a fixture tree's netdevs mean nothing
  // to it); dcb_read unset: the node's DCB netlink.
  LldpRuntimeOptions lldp;
  // Membership sources are dropped off the live kernel (the mesh's UD ports
  // need verbs); registry, procfs root and peer credentials: the Daemon's.
  MeshRuntimeOptions mesh;
  ConfirmGuardOptions confirm;
  ServerOptions server;
};

// The options main() runs with: the access policy and web config files are
// read here, so a bad one stops start-up before anything runs. Errors name
// the flag.
absl::StatusOr<DaemonOptions> DaemonOptionsFromFlags(const Flags& flags);

}  // namespace roced::agent
