// What the fleet mesh's probes of each peer came to over a sliding window:
// per peer, probe size and DSCP, the probes sent, lost and slow, the
// loss ratio, the network round trip's p50 and p99, the responder's hold
// p99, and the flow labels (UDP source ports) of the probes that were
// lost, the lead for a traceroute along the ECMP path that dropped them.
//
// The window (60 s by default) is a ring of slots (6 of 10 s): a probe
// counts in the slot of the moment it was sent, and a slot leaves the
// window whole, so what a snapshot reports moves in steps of one slot.
// Round trips are kept as samples, exact up to `max_samples_per_slot` a
// slot (256: at the default rates a peer under the same ToR gets 10
// probes a second over 3 sizes, about 33 a slot and size); beyond it a
// slot keeps a uniform sample (reservoir sampling with a fixed seed, so a
// run is reproducible) and each kept sample stands for its share of the
// slot's answers in the quantiles. Each sample keeps the responder's hold
// beside it, to 10% (one byte: a code of 1.1^k ns).
//
// History: the counts of a slot that left the window (sent, lost, slow)
// are folded into the series' history, which decays by 1 - 1/kHistorySlots
// a slot (ten minutes at the default 10 s slots): after each slot's time,
// history = history x (1 - 1/kHistorySlots) + that slot's counts, a slot
// without probes counting as zeros. The fold is done as the ring comes
// round, and a snapshot adds the slots that left the window since. The
// slots that leave also teach the series its reference round trip: the
// mean of their p50s over the first kReferenceSlots of them, then a moving
// average that gives each further p50 a weight of 1/kReferenceSlots. An
// answer whose round trip is over kSlowFactor times the reference is
// slow. Before the first slot with answers leaves, nothing is slow.
//
// Bounded: at most `max_keys` (peer, size, DSCP) series; a probe of a new
// series beyond it is refused, not kept. Memory is about
// keys x (slots x (88 + 5 x samples kept) + 250) bytes: 300 series of the
// default pinglist (~51 peers x 3 sizes x 2 DSCPs) at 33 samples a slot
// take about 530 KB, and the bound (8,192 series, full slots) about 70 MB.
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
// The history's decay: a slot's counts are multiplied by
// 1 - 1/kHistorySlots for each slot after it.
inline constexpr uint32_t kHistorySlots = 60;
// The reference round trip's average: the mean of the first this many
// slots' p50s, then each slot that leaves moves it 1/kReferenceSlots of the
// way to its p50.
inline constexpr uint32_t kReferenceSlots = 60;
// An answer is slow when its round trip is over this many times the
// series' reference.
inline constexpr int64_t kSlowFactor = 4;

// One probe's fate, known once it was answered or timed out.
struct ProbeOutcome {
  std::string_view peer;  // Member::name
  uint32_t size_bytes = 0;
  uint32_t dscp = 0;           // 0-63
  int64_t sent_ns = 0;         // monotonic clock, when it was sent
  bool answered = false;
  int64_t rtt_ns = 0;          // network round trip, responder's delay removed (answered only)
  uint32_t flow_label = 0;     // the flow label / UDP source port it used
  int64_t hold_ns = -1;        // the responder's hold (t3 - t2), answered only; -1: unknown
};

struct SeriesWindow {
  std::string peer;
  uint32_t size_bytes = 0;
  uint32_t dscp = 0;
  uint64_t sent = 0;
  uint64_t lost = 0;
  double loss_ratio = 0;   // lost / sent
  uint64_t slow = 0;       // answered, over kSlowFactor x the reference round trip
  int64_t p50_ns = -1;     // -1: nothing answered in the window
  int64_t p99_ns = -1;
  int64_t hold_p99_ns = -1;  // the responder's hold; -1: none known in the window
  std::vector<uint32_t> lost_flow_labels;  // most recent first, at most kLostFlowLabels
  // The decayed history before the window, rounded; zeros when no slot
  // has left the window yet.
  uint64_t hist_sent = 0;
  uint64_t hist_lost = 0;  // at most hist_sent
  uint64_t hist_slow = 0;  // at most hist_sent - hist_lost
  int64_t reference_ns = -1;  // the reference round trip; -1: none learned yet
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
  // beyond max_keys. A probe sent before its slot's ring entry was reused,
  // or in a slot already folded into the history (later than a whole
  // window), is dropped and counted in late().
  absl::Status Record(const ProbeOutcome& outcome);

  // Every series with a probe sent in the window ending at now_ns, sorted
  // by peer, size and DSCP.
  std::vector<SeriesWindow> Snapshot(int64_t now_ns) const;

  // The totals over the window ending at now_ns, of the slots that began
  // at or after since_ns (whole slots: a slot that began before since_ns is
  // left out, so the probes counted were all sent after it).
  WindowTotals Totals(int64_t now_ns, int64_t since_ns) const;

  // Removes the series with no probe sent in the window nor in the
  // kHistorySlots slots before it (one no longer probed, as a size class
  // the path MTU no longer gives, frees its memory then; a pause shorter
  // than that keeps its history). Returns how many went.
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
    uint64_t slow = 0;
    std::vector<uint32_t> rtt_ns;  // saturating at 4.29 s
    std::vector<uint8_t> hold;     // beside rtt_ns: HoldCode of the responder's hold, 0 unknown
  };
  // The decayed counts of the slots before `until` (an epoch), and the
  // reference round trip they taught (0: none yet).
  struct History {
    int64_t until = 0;
    double sent = 0, lost = 0, slow = 0;
    double reference_ns = 0;
    uint32_t reference_slots = 0;  // slots it was learned from, up to kReferenceSlots
  };
  struct Series {
    std::vector<Slot> slots;  // options_.slots, indexed by epoch % slots
    std::vector<std::pair<int64_t, uint32_t>> lost_labels;  // (epoch, label), newest last
    History history;
  };
  explicit ResultWindows(const ResultWindowOptions& options);
  using Key = std::tuple<std::string, uint32_t, uint32_t>;  // peer, size, DSCP
  void Sample(Slot& slot, int64_t rtt_ns, int64_t hold_ns) const;
  bool InWindow(int64_t epoch, int64_t now_epoch) const;
  // The history advanced to the window ending at now_epoch: the ring's
  // slots that left it since `history.until` folded in, in epoch order.
  History Advanced(const Series& series, int64_t now_epoch) const;
  SeriesWindow Summarize(const Key& key, const Series& series, int64_t now_epoch) const;

  ResultWindowOptions options_;
  int64_t slot_ns_ = 0;
  absl::flat_hash_map<Key, Series> series_;
  uint64_t late_ = 0;
};

// A prober's snapshot as the localizer's windows: one PathWindow a series,
// with its slow count and history.
std::vector<PathWindow> ToPathWindows(std::string_view prober, const std::vector<SeriesWindow>& snapshot);

}  // namespace roced::mesh
