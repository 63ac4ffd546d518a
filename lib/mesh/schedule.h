// When the fleet mesh probes which peer with what: the agent's
// pinglist turned into a stream of probes at the default rates (10 a second
// to each peer under the same ToR, 1 a second across), each probe's class
// rotated so that every peer is probed at every size, DSCP and flow label:
//  - sizes (64 B, 1 KiB, the path MTU by default): a path that drops only
//    large packets shows (Alibaba's Aegis missed one with 64 B probes);
//  - DSCPs (RoCE's 26 by default, more when the config names them);
//  - flow labels, an index into the UDP source ports the prober's queue
//    pairs use, so the probes of one pair spread over its ECMP paths.
// The n-th probe of a peer takes the class n in mixed radix (size fastest,
// then DSCP, then flow label): with 3 sizes, one DSCP and 16 flow labels
// every combination comes round every 48 probes, 4.8 s under the ToR.
//
// Each peer's probes start at a phase of its own (a rendezvous hash of
// prober and peer over the interval), so an agent's probes spread evenly
// instead of leaving together. A pinglist change keeps the phase and the
// rotation of the peers that stay. An agent that falls behind (SIGSTOP, a
// loaded CPU) does not burst to catch up: an overdue peer gets one probe
// and its next falls on its own grid after now. Under CPU pressure the
// agent slows the mesh by a factor (at most kMaxSlowdown): slower, never
// stopped.
//
// Pure: the caller passes the monotonic time. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mesh/pinglist.h"

namespace roced::mesh {

struct MeshScheduleOptions {
  double same_tor_per_second = 10;  // probes a second to each peer under the ToR
  double across_per_second = 1;     // ... and to each peer under another ToR
  // Probe sizes in bytes; 0 stands for the path MTU, which the prober
  // resolves per peer.
  std::vector<uint32_t> sizes = {64, 1024, 0};
  std::vector<uint32_t> dscps = {26};
  uint32_t flow_labels = 16;
};

// Allowed ranges, checked by MeshSchedule::Create (errors name the field).
inline constexpr double kMinMeshRate = 0.01;   // one probe in 100 s
inline constexpr double kMaxMeshRate = 1000;
inline constexpr size_t kMaxMeshClasses = 8;   // sizes, and DSCPs
inline constexpr uint32_t kMaxFlowLabels = 256;
inline constexpr uint32_t kMaxProbeSize = 9000;
inline constexpr double kMaxSlowdown = 10;

struct ScheduledProbe {
  std::string peer;
  uint32_t size_bytes = 0;  // 0: the path MTU
  uint32_t dscp = 0;
  uint32_t flow_label = 0;  // index, 0 to flow_labels - 1
  uint64_t sequence = 0;    // this peer's n-th probe
  int64_t due_ns = 0;
};

class MeshSchedule {
 public:
  // INVALID_ARGUMENT naming the field and its range.
  static absl::StatusOr<MeshSchedule> Create(std::string self, const MeshScheduleOptions& options);

  // Sets the peers to probe. A peer that stays keeps its next due time and
  // its rotation; a new one starts at its phase after now_ns.
  void SetPinglist(const Pinglist& pinglist, int64_t now_ns);

  // Divides every rate by `factor`, clamped to [1, kMaxSlowdown]; takes
  // effect from each peer's next probe.
  void SetSlowdown(double factor);
  double slowdown() const { return slowdown_; }

  // The probes due at or before now_ns, in due order, at most `max` (the
  // rest stay due). A peer overdue by several intervals gets one.
  std::vector<ScheduledProbe> Due(int64_t now_ns, size_t max);

  // When the next probe is due; INT64_MAX with no peers. O(1); Due is
  // O(log peers) a probe.
  int64_t NextDue() const;

  size_t peers() const { return peers_.size(); }
  // Probes a second at the current slowdown over every peer.
  double ProbesPerSecond() const;

 private:
  struct Peer {
    std::string name;
    bool same_tor = false;
    uint64_t sequence = 0;
    int64_t due_ns = 0;
  };
  MeshSchedule(std::string self, MeshScheduleOptions options);
  int64_t IntervalNs(const Peer& peer) const;
  ScheduledProbe ProbeOf(const Peer& peer) const;

  std::string self_;
  MeshScheduleOptions options_;
  double slowdown_ = 1;
  std::vector<Peer> peers_;                   // sorted by name
  std::set<std::pair<int64_t, size_t>> queue_;  // (due_ns, index into peers_)
};

}  // namespace roced::mesh
