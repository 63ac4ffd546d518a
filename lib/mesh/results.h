// What the fleet mesh's probes of each peer came to over a sliding window:
// per peer, probe size and DSCP, the probes sent and lost, the
// loss ratio, the network round trip's p50 and p99, and the flow labels
// (UDP source ports) of the probes that were lost, the lead for a
// traceroute along the ECMP path that dropped them.
//
// The window (60 s by default) is a ring of slots (6 of 10 s): a probe
// counts in the slot of the moment it was sent, and a slot leaves the
// window whole, so what a snapshot reports moves in steps of one slot.
// Round trips are kept as samples, exact up to `max_samples_per_slot` a
// slot (256: at the default rates a peer under the same ToR gets 10
// probes a second over 3 sizes, about 33 a slot and size); beyond it a
// slot keeps a uniform sample (reservoir sampling with a fixed seed, so a
// run is reproducible) and each kept sample stands for its share of the
// slot's answers in the quantiles.
//
// Bounded: at most `max_keys` (peer, size, DSCP) series; a probe of a new
// series beyond it is refused, not kept. Memory is about
// keys x slots x (64 + 4 x samples kept) bytes: 300 series of the default
// pinglist (~51 peers x 3 sizes x 2 DSCPs) at 33 samples a slot take
// about 350 KB, and the bound (8,192 series, full slots) about 50 MB.
//
// Pure: the caller passes the monotonic time; no I/O. Not thread-safe: the
// caller serializes Record, Expire and Snapshot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "mesh/localize.h"
#include "model/defaults.h"

namespace roced::mesh {

struct ResultWindowOptions {
  absl::Duration window = model::defaults::kMeshWindow;  // --mesh-window
  uint32_t slots = 6;             // the window's resolution: window / slots
  size_t max_keys = 8192;         // (peer, size, DSCP) series
  size_t max_samples_per_slot = 256;
};

// Allowed ranges, checked by ResultWindows::Create (errors name the field).
inline constexpr absl::Duration kMinResultWindow = absl::Seconds(1);
inline constexpr absl::Duration kMaxResultWindow = absl::Hours(1);
inline constexpr uint32_t kMaxResultSlots = 60;
inline constexpr size_t kMaxResultKeys = 65536;
inline constexpr size_t kMaxSamplesPerSlot = 4096;
// Lost flow labels remembered per series (the most recent ones).
inline constexpr size_t kLostFlowLabels = 8;

// One probe's fate, known once it was answered or timed out.
struct ProbeOutcome {
  std::string_view peer;  // Member::name
  uint32_t size_bytes = 0;
  uint32_t dscp = 0;           // 0-63
  int64_t sent_ns = 0;         // monotonic clock, when it was sent
  bool answered = false;
  int64_t rtt_ns = 0;          // network round trip, responder's delay removed (answered only)
  uint32_t flow_label = 0;     // the flow label / UDP source port it used
};

struct SeriesWindow {
  std::string peer;
  uint32_t size_bytes = 0;
  uint32_t dscp = 0;
  uint64_t sent = 0;
  uint64_t lost = 0;
  double loss_ratio = 0;   // lost / sent
  int64_t p50_ns = -1;     // -1: nothing answered in the window
  int64_t p99_ns = -1;
  std::vector<uint32_t> lost_flow_labels;  // most recent first, at most kLostFlowLabels
};

// Every series of a window added up: probes sent, lost and answered, and
// the round-trip p99 over all answers (-1: none), as a health signal (the
// confirm policy's mesh gates). The p99 comes from a histogram of buckets
// 2% wide, so it is exact to 2%, and the memory is fixed whatever the
// series count.
struct WindowTotals {
  uint64_t sent = 0;
  uint64_t lost = 0;
  uint64_t answered = 0;
  int64_t p99_ns = -1;
};

class ResultWindows {
 public:
  // INVALID_ARGUMENT naming the field and its range.
  static absl::StatusOr<ResultWindows> Create(const ResultWindowOptions& options);

  // Counts one probe. INVALID_ARGUMENT for an empty peer, a DSCP over 63,
  // a negative time or round trip; RESOURCE_EXHAUSTED for a new series
  // beyond max_keys. A probe sent before its slot's ring entry was reused
  // (later than a whole window) is dropped and counted in late().
  absl::Status Record(const ProbeOutcome& outcome);

  // Every series with a probe sent in the window ending at now_ns, sorted
  // by peer, size and DSCP.
  std::vector<SeriesWindow> Snapshot(int64_t now_ns) const;

  // The totals over the window ending at now_ns, of the slots that began
  // at or after since_ns (whole slots: a slot that began before since_ns is
  // left out, so the probes counted were all sent after it).
  WindowTotals Totals(int64_t now_ns, int64_t since_ns) const;

  // Removes the series with nothing in the window (a peer that left the
  // pinglist frees its memory a window later). Returns how many went.
  size_t Expire(int64_t now_ns);
  // Removes every series of a peer at once.
  size_t Forget(std::string_view peer);

  size_t series() const { return series_.size(); }
  uint64_t late() const { return late_; }

 private:
  struct Slot {
    int64_t epoch = -1;  // sent_ns / slot length of what it holds; -1: empty
    uint64_t sent = 0;
    uint64_t lost = 0;
    uint64_t answered = 0;
    std::vector<uint32_t> rtt_ns;  // saturating at 4.29 s
  };
  struct Series {
    std::vector<Slot> slots;  // options_.slots, indexed by epoch % slots
    std::vector<std::pair<int64_t, uint32_t>> lost_labels;  // (epoch, label), newest last
  };
  explicit ResultWindows(const ResultWindowOptions& options);
  using Key = std::tuple<std::string, uint32_t, uint32_t>;  // peer, size, DSCP
  void Sample(Slot& slot, int64_t rtt_ns) const;
  bool InWindow(int64_t epoch, int64_t now_epoch) const;
  SeriesWindow Summarize(const Key& key, const Series& series, int64_t now_epoch) const;

  ResultWindowOptions options_;
  int64_t slot_ns_ = 0;
  absl::flat_hash_map<Key, Series> series_;
  uint64_t late_ = 0;
};

// A prober's snapshot as the localizer's windows: one PathWindow a series.
std::vector<PathWindow> ToPathWindows(std::string_view prober, const std::vector<SeriesWindow>& snapshot);

}  // namespace roced::mesh
