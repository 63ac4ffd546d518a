// Diagnosis: the field guides' troubleshooting lists as checks over what the
// agent knows (discovered devices, the kernel's QoS state of each RoCE
// netdev, the accepted config, probe results, limits). Each check turns a
// misalignment operators otherwise find by hand into a finding with the
// object, what is wrong, and what to do about it.
//
// | check          | finds                                                                  |
// |----------------|------------------------------------------------------------------------|
// | port_state     | a RoCE port that is not ACTIVE                                         |
// | roce_v2_gid    | a RoCE port without a RoCE v2 GID carrying an IP address               |
// | roce_mode      | rdma_cm's default mode left at RoCE v1                                 |
// | pfc_dscp       | RoCE's DSCP classified to a priority without PFC; PFC on a priority    |
// |                | no DSCP maps to; PFC with PCP trust; no PFC at all                      |
// | ecn            | ECN notification/reaction point off on a PFC priority                  |
// | mtu            | RoCE MTU below 4096 because of the netdev MTU                          |
// | pcie           | a NIC trained below its slot's width or speed                          |
// | hugepages      | no hugepages reserved in any size                                      |
// | memlock        | the agent's RLIMIT_MEMLOCK is limited (RDMA registers pinned memory)   |
// | probes         | the latest probe of a peer failed                                      |
// | converged      | the accepted config is not in force                                    |
//
// Pure functions of their inputs; the agent gathers them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hal/hugepage_pools.h"
#include "reconcile/apply.h"
#include "reconcile/state.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::diagnose {

struct Inputs {
  roced::v1::NodeState state;
  // The kernel's view of each RoCE netdev (DCB, ECN, rdma_cm, MTU), by
  // netdev; a netdev missing here was not observed.
  std::map<std::string, reconcile::InterfaceObserved> netdevs;
  // Reserved pages per hugepage size (kB), node-wide.
  std::map<uint64_t, uint64_t> hugepages;
  // The agent's RLIMIT_MEMLOCK (soft) in bytes; nullopt = unlimited.
  std::optional<uint64_t> memlock_bytes;
};

// Gathers the inputs besides the state: each RoCE netdev's QoS through
// `node` (null: not observed, e.g. on a fixture tree whose netdev names mean
// nothing to the running kernel), the node-wide hugepage pools and this
// process's RLIMIT_MEMLOCK. The caller serialises calls into `node`.
Inputs Gather(roced::v1::NodeState state, reconcile::NodeIo* node, const hal::HugepagePools& hugepages);

struct CheckInfo {
  const char* name;
  const char* description;
};
// Every check, in the order findings are produced.
const std::vector<CheckInfo>& Checks();

// Runs the checks named in `only` (every check when empty). An unknown
// name is INVALID_ARGUMENT listing the known ones. Findings come sorted by
// severity (errors first), then check order.
absl::StatusOr<std::vector<roced::v1::Finding>> Run(const Inputs& inputs,
                                                    const std::vector<std::string>& only);

}  // namespace roced::diagnose
