// Bounds on a NodeConfig, the one place they are written: validation checks
// every count against these before it looks at any element (so a config of a
// million entries is refused at the cost of reading a few sizes), the YAML
// decoder bounds its input, and the docs quote them. Probe limits are in
// probe_limits.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"

namespace roced::model::config_limits {

// interfaces: a node has a few RoCE ports (two to sixteen NICs, one or two
// ports each); 256 leaves room for every port of the largest hosts and
// their VFs named one by one.
inline constexpr int kMaxInterfaces = 256;
// hugepages: one pool per page size (2Mi, 1Gi) node-wide and per NUMA node;
// 32 covers both sizes on 16 NUMA nodes (four sockets with sub-NUMA
// clustering), the largest x86-64 servers.
inline constexpr int kMaxHugepages = 32;
// qos.dscp_to_priority: DSCP is 6 bits, so 64 keys exist at most.
inline constexpr int kMaxDscpEntries = 64;
// Lists of priorities (pfc.priorities, ecn.np_priorities/rp_priorities):
// eight priorities, each listed once at most.
inline constexpr int kMaxPriorities = 8;
// ets.priority_to_tc, ets.tc_bandwidth, ets.tsa: exactly one entry per
// priority / traffic class.
inline constexpr int kEtsEntries = 8;
// mesh.tor, mesh.pod: a DNS name's length, as the mesh inventory allows.
inline constexpr size_t kMaxMeshNameLength = 253;

// Issues one validation (or one YAML decode) reports: enough to fix a config
// by, few enough that the answer (and a log line quoting it) stays small.
// Beyond it a last issue says how many more were found.
inline constexpr size_t kMaxIssues = 100;

// A YAML config file: the largest config within every cap above is a few
// hundred kB; 1 MiB is also the gRPC server's message cap.
inline constexpr size_t kMaxConfigBytes = 1u << 20;
// YAML nodes (scalars, sequences, mappings) one config may hold, counted
// before yaml-cpp builds its tree (about 200 bytes a node): a config at the
// caps above (256 interfaces with full QoS, 1024 peers) has about 60,000.
inline constexpr size_t kMaxYamlNodes = 100000;

// Value ranges of single fields (validation's Range checks and the
// messages that quote them).
// An 802.1p priority, a buffer and a traffic class index: 0-7.
inline constexpr uint32_t kMaxPriority = 7;
// DSCP is 6 bits.
inline constexpr uint32_t kMaxDscp = 63;
// A ToS byte (roce.default_tos, probes.traffic_class).
inline constexpr uint32_t kMaxTos = 255;
// ets.tc_bandwidth entries are percentages, summing to this over ETS classes.
inline constexpr uint32_t kEtsBandwidthTotal = 100;
// qos.pfc.delay: the DCB PFC delay allowance, a 16-bit field.
inline constexpr uint32_t kMaxPfcDelay = 65535;
// match.netdev: the kernel's IFNAMSIZ less the terminator.
inline constexpr size_t kMaxNetdevNameLength = 15;
// match.rdma_device: the kernel's IB_DEVICE_NAME_MAX less the terminator.
inline constexpr size_t kMaxRdmaDeviceNameLength = 63;
// hugepages[].count: pages of one pool (2^24 2 MiB pages are 32 TiB).
inline constexpr uint32_t kMaxHugepageCount = 1u << 24;
// hugepages[].numa_node: the kernel's largest NODES_SHIFT (10).
inline constexpr int kMaxNumaNode = 1023;
// reconcile.interval.
inline constexpr absl::Duration kMinReconcileInterval = absl::Seconds(1);
inline constexpr absl::Duration kMaxReconcileInterval = absl::Hours(1);
// pfc_watchdog.poll_interval, detection_time and restoration_time.
inline constexpr absl::Duration kMinWatchdogTime = absl::Milliseconds(10);
inline constexpr absl::Duration kMaxWatchdogPollInterval = absl::Seconds(10);
inline constexpr absl::Duration kMaxWatchdogTime = absl::Minutes(1);

}  // namespace roced::model::config_limits
