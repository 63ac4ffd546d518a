#include "mesh/results.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace roced::mesh {
namespace {

// One splitmix64 step: the reservoir's fixed-seed choice of which kept
// sample a new one replaces.
uint64_t Mix(uint64_t x) { return SplitMix64Finalize(x + 0x9e3779b97f4a7c15ULL); }

// The nearest-rank quantile q of weighted samples sorted by value.
int64_t Quantile(const std::vector<std::pair<uint32_t, double>>& sorted, double total, double q) {
  const double rank = q * total;
  double cumulative = 0;
  for (const auto& [value, weight] : sorted) {
    cumulative += weight;
    if (cumulative >= rank) return value;
  }
  return sorted.back().first;
}

// Round trips (ns, saturated at 2^32) in buckets 2% wide: bucket b holds
// (1.02^(b-1), 1.02^b]; 1,125 buckets reach past 2^32.
constexpr double kBucketGrowth = 1.02;
constexpr size_t kBuckets = 1125;

size_t BucketOf(uint32_t rtt_ns) {
  if (rtt_ns <= 1) return 0;
  const double b = std::ceil(std::log(static_cast<double>(rtt_ns)) / std::log(kBucketGrowth));
  return std::min(static_cast<size_t>(b), kBuckets - 1);
}

// A responder's hold in one byte: 0 unknown, else code c stands for
// (1.1^(c-2), 1.1^(c-1)] ns, the last code for everything from 30 s up.
constexpr double kHoldGrowth = 1.1;

uint8_t HoldCode(int64_t hold_ns) {
  if (hold_ns < 0) return 0;
  if (hold_ns <= 1) return 1;
  const double c = 1 + std::ceil(std::log(static_cast<double>(hold_ns)) / std::log(kHoldGrowth));
  return static_cast<uint8_t>(std::min(c, 255.0));
}

// The middle of a code's range (in ratio), within 5% of any hold in it.
int64_t HoldOf(uint8_t code) {
  if (code <= 1) return code == 0 ? -1 : 1;
  return std::llround(std::pow(kHoldGrowth, static_cast<double>(code) - 1.5));
}

// The decay of the history over n slots.
double Decay(int64_t n) {
  if (n <= 0) return 1;
  if (n > 100'000) return 0;
  return std::pow(1.0 - 1.0 / kHistorySlots, static_cast<double>(n));
}

// The nearest-rank median of a slot's kept round trips (0: none).
int64_t SlotP50(const std::vector<uint32_t>& rtt_ns) {
  if (rtt_ns.empty()) return 0;
  std::vector<uint32_t> v = rtt_ns;
  const size_t mid = (v.size() + 1) / 2 - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}

// A count of the history, rounded, at most `most`.
uint64_t Rounded(double v, uint64_t most) {
  return std::min<uint64_t>(v <= 0 ? 0 : static_cast<uint64_t>(std::llround(v)), most);
}

}  // namespace

absl::StatusOr<ResultWindows> ResultWindows::Create(const ResultWindowOptions& options) {
  if (options.window < kMinResultWindow || options.window > kMaxResultWindow) {
    return absl::InvalidArgumentError(absl::StrCat("window: ", absl::FormatDuration(options.window),
                                                   " is out of range; allowed 1s to 1h"));
  }
  if (options.slots < 1 || options.slots > kMaxResultSlots) {
    return absl::InvalidArgumentError(
        absl::StrCat("slots: ", options.slots, " is out of range; allowed 1-", kMaxResultSlots));
  }
  if (options.window / options.slots < absl::Milliseconds(100)) {
    return absl::InvalidArgumentError(absl::StrCat("slots: ", options.slots, " slots of a ",
                                                   absl::FormatDuration(options.window),
                                                   " window are shorter than 100ms each"));
  }
  if (options.max_keys < 1 || options.max_keys > kMaxResultKeys) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_keys: ", options.max_keys, " is out of range; allowed 1-", kMaxResultKeys));
  }
  if (options.max_samples_per_slot < 1 || options.max_samples_per_slot > kMaxSamplesPerSlot) {
    return absl::InvalidArgumentError(absl::StrCat("max_samples_per_slot: ", options.max_samples_per_slot,
                                                   " is out of range; allowed 1-", kMaxSamplesPerSlot));
  }
  return ResultWindows(options);
}

ResultWindows::ResultWindows(const ResultWindowOptions& options)
    : options_(options), slot_ns_(absl::ToInt64Nanoseconds(options.window / options.slots)) {}

absl::Status ResultWindows::Record(const ProbeOutcome& outcome) {
  if (outcome.peer.empty()) return absl::InvalidArgumentError("peer: empty");
  if (outcome.dscp > 63) {
    return absl::InvalidArgumentError(absl::StrCat("dscp: ", outcome.dscp, " is out of range; allowed 0-63"));
  }
  if (outcome.sent_ns < 0) {
    return absl::InvalidArgumentError(absl::StrCat("sent_ns: ", outcome.sent_ns, " is negative"));
  }
  if (outcome.answered && outcome.rtt_ns < 0) {
    return absl::InvalidArgumentError(absl::StrCat("rtt_ns: ", outcome.rtt_ns, " is negative"));
  }
  Key key(std::string(outcome.peer), outcome.size_bytes, outcome.dscp);
  auto it = series_.find(key);
  if (it == series_.end()) {
    if (series_.size() >= options_.max_keys) {
      return absl::ResourceExhaustedError(absl::StrCat("mesh results: ", series_.size(),
                                                       " series (peer, size, DSCP) kept, the most allowed"));
    }
    it = series_.emplace(std::move(key), Series{}).first;
    it->second.slots.resize(options_.slots);
  }
  Series& series = it->second;
  const int64_t epoch = outcome.sent_ns / slot_ns_;
  // The slots that left the window of this probe's slot go to the history
  // first (among them the ring entry this probe may reuse).
  series.history = Advanced(series, epoch);
  Slot& slot = series.slots[static_cast<size_t>(epoch % options_.slots)];
  if (epoch < slot.epoch || epoch < series.history.until) {
    ++late_;
    return absl::OkStatus();
  }
  if (epoch > slot.epoch) {  // the ring comes round: reuse the slot (and its samples' memory)
    slot.epoch = epoch;
    slot.sent = slot.lost = slot.answered = slot.slow = 0;
    slot.rtt_ns.clear();
    slot.hold.clear();
  }
  ++slot.sent;
  if (outcome.answered) {
    ++slot.answered;
    const double reference = series.history.reference_ns;
    if (reference > 0 && static_cast<double>(outcome.rtt_ns) > kSlowFactor * reference) ++slot.slow;
    Sample(slot, outcome.rtt_ns, outcome.hold_ns);
    return absl::OkStatus();
  }
  ++slot.lost;
  auto& labels = series.lost_labels;
  labels.emplace_back(epoch, outcome.flow_label);
  if (labels.size() > kLostFlowLabels) labels.erase(labels.begin());
  return absl::OkStatus();
}

void ResultWindows::Sample(Slot& slot, int64_t rtt_ns, int64_t hold_ns) const {
  const uint32_t value = static_cast<uint32_t>(
      std::min<int64_t>(rtt_ns, std::numeric_limits<uint32_t>::max()));
  if (slot.rtt_ns.size() < options_.max_samples_per_slot) {
    slot.rtt_ns.push_back(value);
    slot.hold.push_back(HoldCode(hold_ns));
    return;
  }
  // Reservoir sampling: the n-th answer replaces a kept one with
  // probability cap/n, so the kept ones stay a uniform sample.
  const uint64_t n = slot.answered;
  const uint64_t j = Mix(static_cast<uint64_t>(slot.epoch) * 0x100000001b3ULL ^ n) % n;
  if (j < slot.rtt_ns.size()) {
    slot.rtt_ns[j] = value;
    slot.hold[j] = HoldCode(hold_ns);
  }
}

bool ResultWindows::InWindow(int64_t epoch, int64_t now_epoch) const {
  return epoch >= 0 && epoch <= now_epoch && epoch > now_epoch - static_cast<int64_t>(options_.slots);
}

ResultWindows::History ResultWindows::Advanced(const Series& series, int64_t now_epoch) const {
  History h = series.history;
  const int64_t start = now_epoch - static_cast<int64_t>(options_.slots) + 1;  // the window's first slot
  if (start <= h.until) return h;
  std::vector<const Slot*> leaving;
  for (const Slot& slot : series.slots) {
    if (slot.epoch >= h.until && slot.epoch < start) leaving.push_back(&slot);
  }
  std::sort(leaving.begin(), leaving.end(), [](const Slot* a, const Slot* b) { return a->epoch < b->epoch; });
  auto decay = [&h](int64_t to) {
    const double d = Decay(to - h.until);
    h.sent *= d;
    h.lost *= d;
    h.slow *= d;
    h.until = to;
  };
  for (const Slot* slot : leaving) {
    decay(slot->epoch + 1);
    h.sent += static_cast<double>(slot->sent);
    h.lost += static_cast<double>(slot->lost);
    h.slow += static_cast<double>(slot->slow);
    const int64_t p50 = SlotP50(slot->rtt_ns);
    if (p50 <= 0) continue;
    h.reference_slots = std::min(h.reference_slots + 1, kReferenceSlots);
    h.reference_ns += (static_cast<double>(p50) - h.reference_ns) / h.reference_slots;
  }
  decay(start);
  return h;
}

SeriesWindow ResultWindows::Summarize(const Key& key, const Series& series, int64_t now_epoch) const {
  SeriesWindow out;
  out.peer = std::get<0>(key);
  out.size_bytes = std::get<1>(key);
  out.dscp = std::get<2>(key);
  // A slot the history already holds (a snapshot older than the newest
  // probe) is not counted twice.
  const History h = Advanced(series, now_epoch);
  std::vector<std::pair<uint32_t, double>> samples, holds;
  double total = 0, total_holds = 0;
  for (const Slot& slot : series.slots) {
    if (!InWindow(slot.epoch, now_epoch) || slot.epoch < h.until) continue;
    out.sent += slot.sent;
    out.lost += slot.lost;
    out.slow += slot.slow;
    if (slot.rtt_ns.empty()) continue;
    // Each kept sample stands for its share of the slot's answers.
    const double weight = static_cast<double>(slot.answered) / static_cast<double>(slot.rtt_ns.size());
    for (size_t i = 0; i < slot.rtt_ns.size(); ++i) {
      samples.emplace_back(slot.rtt_ns[i], weight);
      if (slot.hold[i] == 0) continue;
      holds.emplace_back(slot.hold[i], weight);
      total_holds += weight;
    }
    total += static_cast<double>(slot.answered);
  }
  if (out.sent > 0) out.loss_ratio = static_cast<double>(out.lost) / static_cast<double>(out.sent);
  if (!samples.empty()) {
    std::sort(samples.begin(), samples.end());
    out.p50_ns = Quantile(samples, total, 0.50);
    out.p99_ns = Quantile(samples, total, 0.99);
  }
  if (!holds.empty()) {
    std::sort(holds.begin(), holds.end());
    out.hold_p99_ns = HoldOf(static_cast<uint8_t>(Quantile(holds, total_holds, 0.99)));
  }
  for (auto it = series.lost_labels.rbegin(); it != series.lost_labels.rend(); ++it) {
    if (InWindow(it->first, now_epoch)) out.lost_flow_labels.push_back(it->second);
  }
  out.hist_sent = Rounded(h.sent, std::numeric_limits<uint64_t>::max());
  out.hist_lost = Rounded(h.lost, out.hist_sent);
  out.hist_slow = Rounded(h.slow, out.hist_sent - out.hist_lost);
  if (h.reference_slots > 0) out.reference_ns = std::llround(h.reference_ns);
  return out;
}

WindowTotals ResultWindows::Totals(int64_t now_ns, int64_t since_ns) const {
  WindowTotals t;
  const int64_t now_epoch = now_ns / slot_ns_;
  std::vector<double> buckets(kBuckets, 0.0);
  for (const auto& [key, series] : series_) {
    for (const Slot& slot : series.slots) {
      if (!InWindow(slot.epoch, now_epoch) || slot.epoch * slot_ns_ < since_ns) continue;
      t.sent += slot.sent;
      t.lost += slot.lost;
      t.answered += slot.answered;
      if (slot.rtt_ns.empty()) continue;
      const double weight = static_cast<double>(slot.answered) / static_cast<double>(slot.rtt_ns.size());
      for (uint32_t v : slot.rtt_ns) buckets[BucketOf(v)] += weight;
    }
  }
  if (t.answered == 0) return t;
  const double rank = 0.99 * static_cast<double>(t.answered);
  double cumulative = 0;
  for (size_t b = 0; b < kBuckets; ++b) {
    cumulative += buckets[b];
    if (cumulative >= rank || b + 1 == kBuckets) {
      t.p99_ns = static_cast<int64_t>(std::pow(kBucketGrowth, static_cast<double>(b)));
      break;
    }
  }
  return t;
}

std::vector<SeriesWindow> ResultWindows::Snapshot(int64_t now_ns) const {
  const int64_t now_epoch = now_ns / slot_ns_;
  std::vector<std::pair<const Key*, const Series*>> live;
  for (const auto& [key, series] : series_) {
    for (const Slot& slot : series.slots) {
      if (InWindow(slot.epoch, now_epoch) && slot.sent > 0) {
        live.emplace_back(&key, &series);
        break;
      }
    }
  }
  std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return *a.first < *b.first; });
  std::vector<SeriesWindow> out;
  out.reserve(live.size());
  for (const auto& [key, series] : live) out.push_back(Summarize(*key, *series, now_epoch));
  return out;
}

size_t ResultWindows::Expire(int64_t now_ns) {
  const int64_t now_epoch = now_ns / slot_ns_;
  const int64_t oldest = now_epoch - static_cast<int64_t>(options_.slots) - static_cast<int64_t>(kHistorySlots);
  return absl::erase_if(series_, [&](const auto& entry) {
    for (const Slot& slot : entry.second.slots) {
      if (slot.epoch > oldest) return false;
    }
    return true;
  });
}

size_t ResultWindows::Forget(std::string_view peer) {
  return absl::erase_if(series_, [&](const auto& entry) { return std::get<0>(entry.first) == peer; });
}

std::vector<PathWindow> ToPathWindows(std::string_view prober, const std::vector<SeriesWindow>& snapshot) {
  std::vector<PathWindow> out;
  out.reserve(snapshot.size());
  for (const SeriesWindow& s : snapshot) {
    out.push_back(PathWindow{.prober = std::string(prober), .target = s.peer, .size_bytes = s.size_bytes,
                             .dscp = s.dscp, .sent = s.sent, .lost = s.lost, .slow = s.slow,
                             .hist_sent = s.hist_sent, .hist_lost = s.hist_lost, .hist_slow = s.hist_slow});
  }
  return out;
}

}  // namespace roced::mesh
