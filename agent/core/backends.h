// What the agent talks to, chosen once. main() builds NodeBackends for the
// node it runs on and hands the parts down (AgentOptions::backends,
// CountersRuntimeOptions, ProbeRuntimeOptions); no component asks again
// whether it runs on the live kernel or a fixture tree.
//
//  - On the running kernel (--sysfs-root /sys): the reconciler's NodeIo is
//    LinuxNodeIo, netdevs are looked up over rtnetlink (sysfs shows another
//    network namespace's devices when it was mounted there), discovery owns
//    verbs contexts, probes open verbs endpoints, counters read ethtool
//    statistics and DCB (which also drive the PFC watchdog), and diagnose
//    reads each RoCE netdev's QoS.
//  - On a fixture tree (any other root: e2e tests, demos): the same
//    LinuxNodeIo over the tree's files (and, given a DCB fixture, its DCB
//    state from files: roced --dcb-fixture), netdevs are directories under
//    <sysfs>/class/net, and nothing that would reach the running kernel's
//    devices by name is made (no verbs, ethtool, DCB reads or QoS view).
// Tests construct the parts they need and fill the fields with fakes.
//
// Threads: built before any agent thread starts; the objects are shared
// read-only afterwards and are thread-safe where they say so.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "hal/dcb_netlink.h"
#include "hal/ethtool_stats.h"
#include "hal/paths.h"
#include "metrics/link_flaps.h"
#include "probe/endpoint.h"
#include "reconcile/apply.h"

namespace roced::agent {

// The Agent's share. Pointers are not owned and outlive the agent.
struct AgentBackends {
  // The reconciler's door to the node. Required.
  reconcile::NodeIo* node_io = nullptr;
  // Whether a netdev without an RDMA device exists; null: a directory
  // <sysfs>/class/net/<netdev>.
  std::function<bool(const std::string&)> netdev_exists;
  // Discovery opens and keeps a verbs context per device.
  bool verbs = false;
  // The netdevs node_io reaches are this node's: diagnose reads their QoS.
  bool qos_view = false;
};

class NodeBackends {
 public:
  // `use_verbs`: the operator allows libibverbs (roced --no-verbs turns it off).
  // `dcb_fixture` (a fixture tree only; empty: none): the directory the
  // reconciler's DCB state is read from (hal::DcbFixtureFiles).
  NodeBackends(const hal::Paths& paths, bool use_verbs, const std::string& dcb_fixture = "");
  NodeBackends(const NodeBackends&) = delete;
  NodeBackends& operator=(const NodeBackends&) = delete;

  bool live() const { return live_; }
  AgentBackends agent() const;
  // Null on a fixture tree.
  hal::NetdevStatsReader* netdev_stats() const { return ethtool_.get(); }
  const hal::DcbNetlink* dcb() const { return dcb_.get(); }
  probe::EndpointFactory* endpoints() const { return endpoints_.get(); }
  // The carrier-change history the counters keep and the reconciler's own
  // link toggles (pfc_en writes) are noted in. Thread-safe.
  metrics::LinkFlapHistory* link_flaps() const { return link_flaps_.get(); }

 private:
  const bool live_;
  const bool verbs_;
  std::unique_ptr<metrics::LinkFlapHistory> link_flaps_;
  std::unique_ptr<reconcile::NodeIo> node_io_;
  std::unique_ptr<hal::EthtoolStats> ethtool_;
  std::unique_ptr<hal::DcbNetlink> dcb_;
  std::unique_ptr<probe::EndpointFactory> endpoints_;
};

}  // namespace roced::agent
