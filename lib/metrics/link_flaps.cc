#include "metrics/link_flaps.h"

#include <algorithm>

namespace roced::metrics {

void LinkFlapHistory::Expire(absl::Time now, Netdev* n) const {
  while (!n->times.empty() && now - n->times.front() > window_) n->times.pop_front();
}

void LinkFlapHistory::Observe(const std::string& netdev, uint64_t carrier_changes, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = netdevs_.try_emplace(netdev);
  Netdev& n = it->second;
  if (added) n.since = now;
  if (!added && carrier_changes > n.count) {
    // A rise of thousands (a storm between two polls) keeps max_times_.
    const uint64_t rise = std::min<uint64_t>(carrier_changes - n.count, max_times_);
    for (uint64_t i = 0; i < rise; ++i) n.times.push_back(now);
    while (n.times.size() > max_times_) n.times.pop_front();
  }
  n.count = carrier_changes;
  Expire(now, &n);
}

void LinkFlapHistory::Retain(const std::set<std::string>& netdevs) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = netdevs_.begin(); it != netdevs_.end();) {
    it = netdevs.count(it->first) ? std::next(it) : netdevs_.erase(it);
  }
}

std::vector<LinkFlaps> LinkFlapHistory::Flaps(absl::Time now) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LinkFlaps> out;
  for (const auto& [name, n] : netdevs_) {
    LinkFlaps f;
    f.netdev = name;
    f.window = window_;
    f.carrier_changes = n.count;
    f.watched_since = n.since;
    f.as_of = now;
    f.changes = std::count_if(n.times.begin(), n.times.end(), [&](absl::Time t) { return now - t <= window_; });
    if (!n.times.empty()) f.last_change = n.times.back();
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace roced::metrics
