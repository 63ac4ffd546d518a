#include "metrics/link_flaps.h"

#include <algorithm>

namespace roced::metrics {

void LinkFlapHistory::Expire(absl::Time now, Netdev* n) const {
  while (!n->times.empty() && now - n->times.front() > window_) n->times.pop_front();
  while (!n->own_times.empty() && now - n->own_times.front() > window_) n->own_times.pop_front();
  while (!n->toggles.empty() && now - n->toggles.front().at > kOwnToggleGrace) n->toggles.pop_front();
}

uint64_t LinkFlapHistory::TakeOwn(Netdev* n, uint64_t rise, absl::Time now) {
  uint64_t own = 0;
  for (OwnToggle& t : n->toggles) {
    if (own == rise) break;
    if (t.at > now || now - t.at > kOwnToggleGrace) continue;
    const uint64_t take = std::min<uint64_t>(t.credit, rise - own);
    t.credit -= static_cast<uint32_t>(take);
    own += take;
  }
  std::erase_if(n->toggles, [](const OwnToggle& t) { return t.credit == 0; });
  return own;
}

void LinkFlapHistory::NoteOwnToggle(const std::string& netdev, absl::Time at) {
  std::lock_guard<std::mutex> lock(mu_);
  Netdev& n = netdevs_[netdev];
  n.toggles.push_back({at});
  while (n.toggles.size() > max_times_) n.toggles.pop_front();
}

void LinkFlapHistory::Observe(const std::string& netdev, uint64_t carrier_changes, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  Netdev& n = netdevs_[netdev];
  // The first reading (NoteOwnToggle() may have met the netdev before).
  const bool baseline = !n.read;
  n.read = true;
  if (baseline) n.since = now;
  if (!baseline && carrier_changes > n.count) {
    // A rise of thousands (a storm between two polls) keeps max_times_.
    const uint64_t rise = std::min<uint64_t>(carrier_changes - n.count, max_times_);
    const uint64_t own = TakeOwn(&n, rise, now);
    for (uint64_t i = 0; i < own; ++i) n.own_times.push_back(now);
    for (uint64_t i = own; i < rise; ++i) n.times.push_back(now);
    while (n.times.size() > max_times_) n.times.pop_front();
    while (n.own_times.size() > max_times_) n.own_times.pop_front();
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
    if (!n.read) continue;  // only noted toggles, no reading yet
    LinkFlaps f;
    f.netdev = name;
    f.window = window_;
    f.carrier_changes = n.count;
    f.watched_since = n.since;
    f.as_of = now;
    auto in_window = [&](absl::Time t) { return now - t <= window_; };
    f.changes = std::count_if(n.times.begin(), n.times.end(), in_window);
    f.own_changes = std::count_if(n.own_times.begin(), n.own_times.end(), in_window);
    if (!n.times.empty()) f.last_change = n.times.back();
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace roced::metrics
