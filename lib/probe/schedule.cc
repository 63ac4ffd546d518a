#include "probe/schedule.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace roced::probe {

ProbeSchedule::ProbeSchedule(double jitter, uint64_t seed)
    : jitter_(std::clamp(jitter, 0.0, 0.5)), rng_(seed) {}

absl::Duration ProbeSchedule::Uniform(absl::Duration max) {
  if (max <= absl::ZeroDuration()) return absl::ZeroDuration();
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return max * u(rng_);
}

absl::Duration ProbeSchedule::Jittered(absl::Duration interval) {
  std::uniform_real_distribution<double> u(-jitter_, jitter_);
  return interval * (1.0 + u(rng_));
}

void ProbeSchedule::Configure(const std::vector<std::string>& peers,
                              absl::Duration latency_interval, absl::Duration bandwidth_interval,
                              absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<ScheduleKey, Entry> next;
  for (const std::string& peer : peers) {
    for (auto [kind, interval] :
         {std::pair{roced::v1::PROBE_KIND_LATENCY, latency_interval},
          std::pair{roced::v1::PROBE_KIND_BANDWIDTH, bandwidth_interval}}) {
      if (interval <= absl::ZeroDuration()) continue;
      ScheduleKey key{peer, kind};
      auto it = entries_.find(key);
      Entry e;
      e.interval = interval;
      if (it == entries_.end()) {
        e.due = now + Uniform(interval);
      } else {
        e.due = std::min(it->second.due, now + interval);
      }
      next[key] = e;
    }
  }
  entries_ = std::move(next);
}

std::vector<ScheduleKey> ProbeSchedule::Due(absl::Time now) const {
  std::vector<std::pair<absl::Time, ScheduleKey>> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, e] : entries_) {
      if (e.due <= now) due.emplace_back(e.due, key);
    }
  }
  std::stable_sort(due.begin(), due.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ScheduleKey> out;
  for (auto& [t, key] : due) out.push_back(std::move(key));
  return out;
}

void ProbeSchedule::Started(const ScheduleKey& key, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  it->second.due = now + Jittered(it->second.interval);
}

void ProbeSchedule::Defer(const ScheduleKey& key, absl::Time now, absl::Duration delay) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  it->second.due = now + delay;
}

absl::Time ProbeSchedule::NextDue() const {
  std::lock_guard<std::mutex> lock(mu_);
  absl::Time t = absl::InfiniteFuture();
  for (const auto& [key, e] : entries_) t = std::min(t, e.due);
  return t;
}

absl::Time ProbeSchedule::DueTime(const ScheduleKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? absl::InfiniteFuture() : it->second.due;
}

ProbeLimiter::Slot& ProbeLimiter::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    limiter_ = other.limiter_;
    bandwidth_ = other.bandwidth_;
    other.limiter_ = nullptr;
  }
  return *this;
}

void ProbeLimiter::Slot::Release() {
  if (limiter_ != nullptr) limiter_->Release(bandwidth_);
  limiter_ = nullptr;
}

absl::StatusOr<ProbeLimiter::Slot> ProbeLimiter::TryAcquire(roced::v1::ProbeKind kind,
                                                           uint32_t max_concurrent) {
  const bool bandwidth = kind == roced::v1::PROBE_KIND_BANDWIDTH;
  std::lock_guard<std::mutex> lock(mu_);
  if (running_ >= static_cast<int>(std::max<uint32_t>(1, max_concurrent))) {
    return absl::ResourceExhaustedError(
        absl::StrCat(running_, " probe(s) already running; probes.max_concurrent is ",
                     std::max<uint32_t>(1, max_concurrent)));
  }
  if (bandwidth && bandwidth_running_) {
    return absl::ResourceExhaustedError(
        "a bandwidth probe is already running; bandwidth probes run one at a time");
  }
  ++running_;
  if (bandwidth) bandwidth_running_ = true;
  Slot slot;
  slot.limiter_ = this;
  slot.bandwidth_ = bandwidth;
  return slot;
}

void ProbeLimiter::Release(bool bandwidth) {
  std::lock_guard<std::mutex> lock(mu_);
  --running_;
  if (bandwidth) bandwidth_running_ = false;
}

int ProbeLimiter::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

}  // namespace roced::probe
