// Diagnosis: the field guides' troubleshooting lists as checks over what the
// agent knows (discovered devices, the kernel's QoS state of each RoCE
// netdev, the accepted config, probe results, limits). Each check turns a
// misalignment operators otherwise find by hand into a finding with the
// object, what is wrong, and what to do about it.
//
// Each check is one file under lib/diagnose/checks/ (port_state, roce_v2_gid,
// roce_mode, pfc_dscp, switch_alignment, dcbx_mode, ecn, mtu, pcie,
// hugepages, memlock, probes, converged, pause_without_ecn, link_flaps,
// probe_baseline, numa_locality, neighbours, arp_flux, clock_sync) carrying
// its name, what it looks for, the Inputs it reads and the field guide's rule
// it holds the node to; Checks() lists them.
//
// Pure functions of their inputs; the agent gathers them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hal/arp_sysctls.h"
#include "hal/clock_sync.h"
#include "hal/hugepage_pools.h"
#include "metrics/congestion_window.h"
#include "metrics/link_flaps.h"
#include "hal/neighbours.h"
#include "hal/numa_locality.h"
#include "hal/paths.h"
#include "probe/verbs_endpoint.h"
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
  // pause_without_ecn: the RoCE netdevs' congestion counters at the start
  // and end of a window; nullopt when the agent samples none (no counters
  // runtime), so the check has nothing to say.
  std::optional<metrics::CongestionWindow> congestion;
  // link_flaps: the carrier changes of each watched RoCE netdev.
  std::vector<metrics::LinkFlaps> link_flaps;
  // probe_baseline: the probe figures per driver/firmware (the caller adds
  // them, like the probe summaries).
  roced::v1::ProbeBaselines probe_baselines;
  // numa_locality: the CPUs of each NUMA node, the CPUs the agent may run
  // on (empty: unknown), the hugepages of each NUMA node (node -> page size
  // kB -> pages) and each RDMA device's IRQs with the CPUs they may go to.
  std::map<int32_t, hal::CpuSet> numa_cpus;
  hal::CpuSet allowed_cpus;
  std::map<int32_t, std::map<uint64_t, uint64_t>> numa_hugepages;
  std::map<std::string, std::map<uint32_t, hal::CpuSet>> device_irqs;
  // numa_locality: probe buffers not bound to their NIC's node so far.
  probe::BufferBindFailures probe_buffer_binds;
  // neighbours, arp_flux: each RoCE netdev's addresses and neighbour table,
  // and its ARP sysctls with conf/all's; a netdev missing was not read.
  std::map<std::string, std::vector<hal::IpAddress>> addresses;
  std::map<std::string, std::vector<hal::Neighbour>> neighbours;
  std::map<std::string, hal::ArpSysctls> arp_sysctls;
  hal::ArpSysctls arp_sysctls_all;
  // clock_sync: the kernel's clock (nullopt: adjtimex failed) and the PTP
  // hardware clocks.
  std::optional<hal::KernelClock> clock;
  std::vector<hal::PtpClock> ptp_clocks;
  // neighbours: the kernel's route to each peer address (PeerAddresses),
  // read when the netdevs are live (GatherHost's live_netdevs).
  bool live_netdevs = false;
  std::map<std::string, hal::RouteHop> routes;
};

// Gathers the inputs besides the state: each RoCE netdev's QoS through
// `node` (null: not observed, e.g. on a fixture tree whose netdev names mean
// nothing to the running kernel), the node-wide hugepage pools and this
// process's RLIMIT_MEMLOCK. The caller serialises calls into `node`.
Inputs Gather(roced::v1::NodeState state, reconcile::NodeIo* node, const hal::HugepagePools& hugepages);

// Adds what the host checks read (numa_locality, neighbours, arp_flux,
// clock_sync) to `in`, whose state is already set: NUMA topology,
// hugepages per node, IRQ affinity, PTP clocks and each RoCE netdev's ARP
// sysctls under `paths`; with `live_netdevs` (the RoCE netdevs are the
// running kernel's, not a fixture tree's) also their addresses and
// neighbours over rtnetlink. Thread-safe; reads only.
void GatherHost(const hal::Paths& paths, bool live_netdevs, Inputs* in);

// Where RoCE traffic to peers goes, the neighbours check's targets: each
// probe peer's data-plane address (from its GID) and configured peer
// addresses that are IP literals; address -> peer name.
std::map<std::string, std::string> PeerAddresses(const Inputs& in);

// Adds the kernel's route to each of PeerAddresses(*in) when GatherHost
// found the netdevs live. Call once the probe summaries are in the state.
void GatherRoutes(Inputs* in);

struct CheckInfo {
  const char* name;
  const char* description;  // what it looks for, in a line
  const char* inputs;       // the Inputs it reads
  const char* rule;         // the field guide's rule it holds the node to
};
// Every check, in the order findings are produced.
const std::vector<CheckInfo>& Checks();

// A check that did not run because it had nothing to look at, and why.
struct SkippedCheck {
  std::string check;
  std::string reason;
};

// Runs the checks named in `only` (every check when empty). An unknown
// name is INVALID_ARGUMENT listing the known ones. Findings come sorted by
// severity (errors first), then check order. A check without its inputs
// (no RoCE netdev's kernel state read, no probe run yet, ...) is not run:
// it is added to `skipped` (when given) with the reason, so that nothing
// reads as passed that was not looked at.
absl::StatusOr<std::vector<roced::v1::Finding>> Run(const Inputs& inputs, const std::vector<std::string>& only,
                                                    std::vector<SkippedCheck>* skipped = nullptr);

}  // namespace roced::diagnose
