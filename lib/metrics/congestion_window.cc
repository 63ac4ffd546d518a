#include "metrics/congestion_window.h"

namespace roced::metrics {
namespace {

void AddTo(std::optional<uint64_t>* sum, uint64_t value) { *sum = sum->value_or(0) + value; }

void AddCounter(const roced::v1::Counter& c, CongestionCounters* out) {
  const std::string& n = c.name();
  if ((n == "pfc_pause_frames_received" || n == "pfc_pause_frames_sent") && c.has_priority()) {
    out->pause_frames[c.priority()] += c.value();
  } else if (n == "ecn_marked_packets") {
    AddTo(&out->ecn_marked, c.value());
  } else if (n == "cnp_sent") {
    AddTo(&out->cnp_sent, c.value());
  } else if (n == "cnp_handled") {
    AddTo(&out->cnp_handled, c.value());
  }
}

}  // namespace

CongestionSample CongestionSampleOf(absl::Time at, const std::vector<roced::v1::CounterSet>& sets) {
  CongestionSample s;
  s.at = at;
  for (const auto& set : sets) {
    if (set.netdev().empty()) continue;
    CongestionCounters& counters = s.netdevs[set.netdev()];
    for (const auto& c : set.counters()) AddCounter(c, &counters);
  }
  return s;
}

bool CongestionSamples::Due(absl::Time now) const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_.empty() || now - samples_.back().at >= every_;
}

void CongestionSamples::Offer(CongestionSample sample) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!samples_.empty() && sample.at - samples_.back().at < every_) return;
  samples_.push_back(std::move(sample));
  while (samples_.size() > keep_) samples_.pop_front();
}

CongestionWindow CongestionSamples::WindowTo(CongestionSample current) const {
  CongestionWindow w;
  w.min_span = min_span_;
  std::lock_guard<std::mutex> lock(mu_);
  if (!samples_.empty()) w.sampled_for = current.at - samples_.front().at;
  for (auto it = samples_.rbegin(); it != samples_.rend(); ++it) {
    if (current.at - it->at >= min_span_) {
      w.start = *it;
      break;
    }
  }
  w.end = std::move(current);
  return w;
}

size_t CongestionSamples::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_.size();
}

}  // namespace roced::metrics
