#include "util/log_limiter.h"

namespace roced::util {

std::optional<uint64_t> LogLimiter::Allow(absl::string_view key, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kinds_.find(key);
  if (it == kinds_.end()) {
    // Kinds whose interval ended hold nothing worth keeping but a count,
    // which the next line of theirs would report; past the cap they go.
    if (kinds_.size() >= max_keys_) {
      for (auto k = kinds_.begin(); k != kinds_.end();) {
        k = now - k->second.logged >= interval_ && k->second.dropped == 0 ? kinds_.erase(k) : std::next(k);
      }
    }
    if (kinds_.size() < max_keys_) it = kinds_.emplace(std::string(key), Kind{}).first;
  }
  Kind& kind = it == kinds_.end() ? other_ : it->second;
  if (now - kind.logged < interval_) {
    ++kind.dropped;
    return std::nullopt;
  }
  const uint64_t dropped = kind.dropped;
  kind = Kind{now, 0};
  return dropped;
}

}  // namespace roced::util
