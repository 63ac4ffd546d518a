// Probe defaults and limits, the one place they are written: validation of
// `probes:` in a NodeConfig, ApplyDefaults, and the probe runtime's checks of
// RunProbe and OpenEndpoint requests all use these.
#pragma once

#include <cstdint>

#include "absl/time/time.h"
#include "model/config_limits.h"

namespace roced::model::probe_limits {

inline constexpr uint32_t kDefaultMaxConcurrent = 4;
inline constexpr uint32_t kMaxMaxConcurrent = 64;
inline constexpr uint32_t kMaxTrafficClass = config_limits::kMaxTos;

// probes.peers: a full mesh over a rack or a pod of 1024 nodes. Every peer
// is scheduled, probed and kept (results, metric series) by the agent, so
// the list bounds that work; larger fabrics probe a sample of their peers.
inline constexpr int kMaxPeers = 1024;
// A peer's name is typically its hostname: at most 253 characters (a fully
// qualified DNS name), no control characters (it lands in logs and labels).
inline constexpr size_t kMaxPeerNameLength = 253;
// host:port with the longest host: "[" + 253 + "]" + ":" + 5 digits.
inline constexpr size_t kMaxPeerAddressLength = 262;
// probes.device: an RDMA device name (the kernel's IB_DEVICE_NAME_MAX is 64
// with the terminating NUL).
inline constexpr size_t kMaxDeviceNameLength = config_limits::kMaxRdmaDeviceNameLength;

// Latency (RDMA WRITE ping-pong).
inline constexpr uint32_t kDefaultLatencySize = 2;
inline constexpr uint32_t kMaxLatencySize = 1u << 20;
inline constexpr uint32_t kDefaultIterations = 1000;
inline constexpr uint32_t kMaxIterations = 1000000;
inline constexpr absl::Duration kDefaultLatencyInterval = absl::Seconds(10);
inline constexpr absl::Duration kMinLatencyInterval = absl::Seconds(1);

// Bandwidth (streaming RDMA WRITE).
inline constexpr uint32_t kDefaultBandwidthSize = 65536;
inline constexpr uint32_t kMaxSize = 1u << 24;
inline constexpr uint32_t kDefaultQps = 1;
inline constexpr uint32_t kMaxQps = 16;
inline constexpr uint32_t kDefaultOutstanding = 128;
inline constexpr uint32_t kMaxOutstanding = 4096;
inline constexpr absl::Duration kDefaultDuration = absl::Seconds(2);
inline constexpr absl::Duration kMinDuration = absl::Milliseconds(100);
inline constexpr absl::Duration kMaxDuration = absl::Seconds(30);
inline constexpr absl::Duration kDefaultBandwidthInterval = absl::Minutes(5);
inline constexpr absl::Duration kMinBandwidthInterval = absl::Minutes(1);
inline constexpr absl::Duration kMaxInterval = absl::Hours(24);

}  // namespace roced::model::probe_limits
