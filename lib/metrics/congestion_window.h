// Whether ECN carries the congestion a RoCE netdev sees: the counters that
// tell, sampled over a window. Pause frames rising while ECN-marked
// packets and CNPs stay flat means congestion is being absorbed by PFC
// alone (ECN off at the switch, a DSCP the switch does not mark, DCQCN
// disabled), which spreads it through the fabric.
//
// A sample is taken from one GetCounters-style reading (BuildCounterSets:
// the ports' hw_counters and the netdevs' ethtool statistics), so the
// names are the stable cross-driver ones. CongestionSamples keeps a small
// ring of them (one every `every`, at most `keep`): the diagnosis compares
// the counters now with the newest sample at least `min_span` old. Memory
// stays bounded whatever the uptime.
//
// Thread-safe (CongestionSamples); the rest is pure.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "roced/v1/agent.pb.h"

namespace roced::metrics {

// One netdev's congestion counters; a counter the driver does not keep is
// absent (nullopt, or no priority entry).
struct CongestionCounters {
  // PFC pause frames received plus sent, by priority.
  std::map<uint32_t, uint64_t> pause_frames;
  // Summed over the netdev's RDMA ports (hw_counters).
  std::optional<uint64_t> ecn_marked;   // ecn_marked_packets (np_ecn_marked_roce_packets)
  std::optional<uint64_t> cnp_sent;     // cnp_sent (np_cnp_sent)
  std::optional<uint64_t> cnp_handled;  // cnp_handled (rp_cnp_handled)
};

struct CongestionSample {
  absl::Time at;  // monotonic
  std::map<std::string, CongestionCounters> netdevs;
};

// The sample in one reading's counter sets (BuildCounterSets' output).
CongestionSample CongestionSampleOf(absl::Time at, const std::vector<roced::v1::CounterSet>& sets);

// The two ends of a window. `start` is empty while no sample is old
// enough (`sampled_for` says how long samples have been kept, `min_span`
// what is needed).
struct CongestionWindow {
  std::optional<CongestionSample> start;
  CongestionSample end;
  absl::Duration min_span;
  absl::Duration sampled_for;
};

class CongestionSamples {
 public:
  explicit CongestionSamples(absl::Duration every = absl::Seconds(30), size_t keep = 10,
                             absl::Duration min_span = absl::Seconds(60))
      : every_(every), keep_(keep), min_span_(min_span) {}

  // Whether a sample taken at `now` would be kept (cheap: callers read the
  // counters only then).
  bool Due(absl::Time now) const;
  // Keeps `sample` when due; the oldest beyond `keep` is dropped.
  void Offer(CongestionSample sample);
  // The window from the newest kept sample at least min_span before
  // `current` to `current`.
  CongestionWindow WindowTo(CongestionSample current) const;
  size_t size() const;

 private:
  const absl::Duration every_;
  const size_t keep_;
  const absl::Duration min_span_;
  mutable std::mutex mu_;
  std::deque<CongestionSample> samples_;  // oldest first; guarded by mu_
};

}  // namespace roced::metrics
