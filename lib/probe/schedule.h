// When scheduled probes run, and how many run at once.
//
// ProbeSchedule is pure bookkeeping on an injected clock (the caller passes
// `now`), so tests drive it without sleeping: every (peer, kind) pair has a
// next due time; after a start the next one is the interval with a random
// jitter of +-`jitter` of it, so agents that started together drift apart
// instead of probing in lock step. New pairs are first due at a random
// point within their first interval, which spreads a fleet's start-up.
//
// ProbeLimiter enforces probes.max_concurrent across scheduled and on-demand
// probes, and runs bandwidth probes one at a time (two would split the
// link and both measure half of it).
//
// Both are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "roced/v1/state.pb.h"

namespace roced::probe {

struct ScheduleKey {
  std::string peer;
  roced::v1::ProbeKind kind = roced::v1::PROBE_KIND_UNSPECIFIED;
  bool operator<(const ScheduleKey& o) const {
    return peer != o.peer ? peer < o.peer : kind < o.kind;
  }
  bool operator==(const ScheduleKey& o) const { return peer == o.peer && kind == o.kind; }
};

class ProbeSchedule {
 public:
  // `jitter` is a fraction of the interval (0.1: +-10 %); `seed` makes the
  // random draws reproducible in tests.
  explicit ProbeSchedule(double jitter = 0.1, uint64_t seed = std::random_device{}());

  // Sets the scheduled pairs: every peer gets a latency pair when
  // `latency_interval` > 0 and a bandwidth pair when `bandwidth_interval`
  // > 0. Pairs that stay keep their due time (pulled in when their interval
  // shrank below what is left); pairs that go are dropped.
  void Configure(const std::vector<std::string>& peers, absl::Duration latency_interval,
                 absl::Duration bandwidth_interval, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // Pairs due at `now`, earliest due first.
  std::vector<ScheduleKey> Due(absl::Time now) const ABSL_LOCKS_EXCLUDED(mu_);

  // A pair started at `now`: next due one jittered interval later.
  void Started(const ScheduleKey& key, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // A due pair could not start (limits): try again at `now + delay`.
  void Defer(const ScheduleKey& key, absl::Time now, absl::Duration delay)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The earliest due time; InfiniteFuture when nothing is scheduled.
  absl::Time NextDue() const ABSL_LOCKS_EXCLUDED(mu_);

  // For tests: the due time of `key` (InfiniteFuture when not scheduled).
  absl::Time DueTime(const ScheduleKey& key) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    absl::Duration interval;
    absl::Time due;
  };
  absl::Duration Jittered(absl::Duration interval) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Duration Uniform(absl::Duration max) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const double jitter_;
  mutable std::mutex mu_;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  std::map<ScheduleKey, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

class ProbeLimiter {
 public:
  // A running probe's slot; released when destroyed.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept { *this = std::move(other); }
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { Release(); }
    void Release();

   private:
    friend class ProbeLimiter;
    ProbeLimiter* limiter_ = nullptr;
    bool bandwidth_ = false;
  };

  // A slot for one probe of `kind`, or RESOURCE_EXHAUSTED saying which
  // limit was hit: `max_concurrent` probes already running, or a bandwidth
  // probe already running.
  absl::StatusOr<Slot> TryAcquire(roced::v1::ProbeKind kind, uint32_t max_concurrent)
      ABSL_LOCKS_EXCLUDED(mu_);

  int running() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Release(bool bandwidth) ABSL_LOCKS_EXCLUDED(mu_);

  mutable std::mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool bandwidth_running_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace roced::probe
