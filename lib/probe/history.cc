#include "probe/history.h"

#include <algorithm>

namespace roced::probe {

namespace {
bool Newer(const roced::v1::ProbeResult& a, const roced::v1::ProbeResult& b) {
  if (a.started_at().seconds() != b.started_at().seconds()) {
    return a.started_at().seconds() > b.started_at().seconds();
  }
  return a.started_at().nanos() > b.started_at().nanos();
}
}  // namespace

roced::v1::ProbeSummary SummaryOf(const roced::v1::ProbeResult& result) {
  roced::v1::ProbeSummary s;
  s.set_peer(result.peer());
  s.set_kind(result.kind());
  *s.mutable_last_run() = result.started_at();
  s.set_last_success(result.success());
  s.set_last_failure_reason(result.failure_reason());
  if (result.has_latency()) {
    s.set_p50_us(result.latency().p50_us());
    s.set_p99_us(result.latency().p99_us());
  }
  if (result.has_bandwidth()) s.set_gbps(result.bandwidth().gbps());
  s.set_peer_data_ip(result.peer_data_ip());
  return s;
}

void ProbeHistory::Add(const roced::v1::ProbeResult& result) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  const std::pair<std::string, int> key{result.peer(), static_cast<int>(result.kind())};
  if (rings_.size() >= max_keys_ && rings_.find(key) == rings_.end()) {
    auto oldest = rings_.begin();
    for (auto it = rings_.begin(); it != rings_.end(); ++it) {
      if (Newer(oldest->second.back(), it->second.back())) oldest = it;
    }
    rings_.erase(oldest);
  }
  auto& ring = rings_[key];
  ring.push_back(result);
  while (ring.size() > capacity_) ring.pop_front();
}

std::vector<roced::v1::ProbeResult> ProbeHistory::List(const std::string& peer,
                                                       roced::v1::ProbeKind kind,
                                                       size_t limit) const {
  std::vector<roced::v1::ProbeResult> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, ring] : rings_) {
      if (!peer.empty() && key.first != peer) continue;
      if (kind != roced::v1::PROBE_KIND_UNSPECIFIED && key.second != kind) continue;
      out.insert(out.end(), ring.begin(), ring.end());
    }
  }
  std::stable_sort(out.begin(), out.end(), Newer);
  if (limit != 0 && out.size() > limit) out.resize(limit);
  return out;
}

std::vector<roced::v1::ProbeSummary> ProbeHistory::Summaries() const {
  std::vector<roced::v1::ProbeSummary> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, ring] : rings_) {
    if (!ring.empty()) out.push_back(SummaryOf(ring.back()));
  }
  return out;
}

}  // namespace roced::probe
