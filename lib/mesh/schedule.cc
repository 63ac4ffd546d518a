#include "mesh/schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace roced::mesh {
namespace {

absl::Status CheckRate(const char* field, double rate) {
  if (!(rate >= kMinMeshRate && rate <= kMaxMeshRate)) {  // NaN fails too
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", rate, " is out of range; allowed ",
                                                   kMinMeshRate, "-", kMaxMeshRate, " probes a second"));
  }
  return absl::OkStatus();
}

absl::Status CheckClasses(const char* field, const std::vector<uint32_t>& values, uint32_t max,
                          const char* allowed) {
  if (values.empty() || values.size() > kMaxMeshClasses) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", values.size(), " values; allowed 1-",
                                                   kMaxMeshClasses));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] > max) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]: ", values[i], " is out of range; allowed ", allowed));
    }
    for (size_t j = 0; j < i; ++j) {
      if (values[j] == values[i]) {
        return absl::InvalidArgumentError(absl::StrCat(field, "[", i, "]: ", values[i], " is listed twice"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MeshSchedule> MeshSchedule::Create(std::string self, const MeshScheduleOptions& options) {
  if (absl::Status s = CheckRate("same_tor_per_second", options.same_tor_per_second); !s.ok()) return s;
  if (absl::Status s = CheckRate("across_per_second", options.across_per_second); !s.ok()) return s;
  if (absl::Status s = CheckClasses("sizes", options.sizes, kMaxProbeSize, "0 (the path MTU) to 9000");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckClasses("dscps", options.dscps, 63, "0-63"); !s.ok()) return s;
  if (options.flow_labels < 1 || options.flow_labels > kMaxFlowLabels) {
    return absl::InvalidArgumentError(absl::StrCat("flow_labels: ", options.flow_labels,
                                                   " is out of range; allowed 1-", kMaxFlowLabels));
  }
  return MeshSchedule(std::move(self), options);
}

MeshSchedule::MeshSchedule(std::string self, MeshScheduleOptions options)
    : self_(std::move(self)), options_(std::move(options)) {}

int64_t MeshSchedule::IntervalNs(const Peer& peer) const {
  const double rate = peer.same_tor ? options_.same_tor_per_second : options_.across_per_second;
  return static_cast<int64_t>(std::llround(1e9 * slowdown_ / rate));
}

ScheduledProbe MeshSchedule::ProbeOf(const Peer& peer) const {
  const uint64_t n_sizes = options_.sizes.size();
  const uint64_t n_dscps = options_.dscps.size();
  ScheduledProbe p;
  p.peer = peer.name;
  p.sequence = peer.sequence;
  p.size_bytes = options_.sizes[peer.sequence % n_sizes];
  p.dscp = options_.dscps[(peer.sequence / n_sizes) % n_dscps];
  p.flow_label = static_cast<uint32_t>((peer.sequence / (n_sizes * n_dscps)) % options_.flow_labels);
  p.due_ns = peer.due_ns;
  return p;
}

void MeshSchedule::SetPinglist(const Pinglist& pinglist, int64_t now_ns) {
  absl::flat_hash_map<std::string, Peer> old;
  for (Peer& p : peers_) {
    std::string name = p.name;
    old.emplace(std::move(name), std::move(p));
  }
  peers_.clear();
  queue_.clear();
  for (const PinglistEntry& e : pinglist.entries) {
    Peer peer;
    peer.name = e.peer;
    peer.same_tor = e.scope == PeerScope::kSameTor;
    if (auto it = old.find(e.peer); it != old.end() && it->second.same_tor == peer.same_tor) {
      peer.sequence = it->second.sequence;
      peer.due_ns = it->second.due_ns;
    } else {
      // Its own phase within one interval: the agent's probes spread out.
      const uint64_t interval = static_cast<uint64_t>(IntervalNs(peer));
      peer.due_ns = now_ns + static_cast<int64_t>(RendezvousWeight(self_, e.peer) % interval);
    }
    peers_.push_back(std::move(peer));
  }
  std::sort(peers_.begin(), peers_.end(), [](const Peer& a, const Peer& b) { return a.name < b.name; });
  peers_.erase(std::unique(peers_.begin(), peers_.end(),
                           [](const Peer& a, const Peer& b) { return a.name == b.name; }),
               peers_.end());
  for (size_t i = 0; i < peers_.size(); ++i) queue_.emplace(peers_[i].due_ns, i);
}

void MeshSchedule::SetSlowdown(double factor) {
  slowdown_ = std::isnan(factor) ? 1 : std::clamp(factor, 1.0, kMaxSlowdown);
}

std::vector<ScheduledProbe> MeshSchedule::Due(int64_t now_ns, size_t max) {
  std::vector<ScheduledProbe> out;
  while (out.size() < max && !queue_.empty() && queue_.begin()->first <= now_ns) {
    const size_t index = queue_.begin()->second;
    queue_.erase(queue_.begin());
    Peer& peer = peers_[index];
    out.push_back(ProbeOf(peer));
    ++peer.sequence;
    // The next point of its grid after now: missed ones are skipped.
    const int64_t interval = IntervalNs(peer);
    peer.due_ns += interval;
    if (peer.due_ns <= now_ns) peer.due_ns += ((now_ns - peer.due_ns) / interval + 1) * interval;
    queue_.emplace(peer.due_ns, index);
  }
  return out;
}

int64_t MeshSchedule::NextDue() const {
  return queue_.empty() ? std::numeric_limits<int64_t>::max() : queue_.begin()->first;
}

double MeshSchedule::ProbesPerSecond() const {
  double total = 0;
  for (const Peer& p : peers_) total += (p.same_tor ? options_.same_tor_per_second : options_.across_per_second);
  return total / slowdown_;
}

}  // namespace roced::mesh
