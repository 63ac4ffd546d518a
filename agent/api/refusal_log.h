// Refused calls, aggregated so that their volume is bounded whatever a
// caller sends: an unauthenticated client can make thousands of calls a
// second, each from an identity of its choosing (a plaintext peer address,
// a certificate name).
//
// Per interval (60 s by default) and per key (identity, method, code):
//   - the first refusal is written to the file and logged (WARN) at once;
//   - later ones are counted; when the interval ends (seen at the next
//     refusal, or FlushRefusals) each key refused again gets one summary
//     line in the file ({"repeated":N,"since":...}), and stderr gets one
//     WARN line for the whole interval (the total, the keys, the file);
//   - at most max_keys keys are tracked; refusals of further keys go to one
//     "other" bucket (identity "(other callers)", method and code "*"),
//     whose first refusal is written and logged once, then counted.
// So an interval writes at most 2 * (max_keys + 1) file lines and
// max_keys + 2 WARN lines, each cut to a bounded length (identity 256
// bytes, message 512), and memory holds at most max_keys keys.
//
// Time is given, not read: each record's time drives the intervals.
// Every refusal counts in roced_api_refusals_total{method,code}, unlimited.
//
// Threads: thread-safe (one mutex; LineFile's is taken under it).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "agent/api/audit_log.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"

namespace roced::agent {

class RefusalLog {
 public:
  // `file` may have an empty path (no file); it must outlive this.
  RefusalLog(LineFile* file, absl::Duration interval, size_t max_keys)
      : file_(file), interval_(interval), max_keys_(max_keys) {}

  void Refuse(const AuditRecord& record) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends the interval under way at `now`, writing its summaries.
  void Flush(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Counts refusals in `refusals` (roced_api_refusals_total{method,code}).
  void RegisterMetrics(prometheus::Family<prometheus::Counter>* refusals) ABSL_LOCKS_EXCLUDED(mu_);

  // Refusals seen in all (tests).
  uint64_t total() const ABSL_LOCKS_EXCLUDED(mu_);
  // The time of the last refusal seen (InfinitePast: none).
  absl::Time last() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // identity, method, code
  struct Bucket {
    std::string transport;
    std::string roles;
    uint64_t repeated = 0;  // after the first, logged one
  };

  void EndInterval(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriteFirst(const AuditRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriteSummary(const Key& key, const Bucket& bucket, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  LineFile* const file_;
  const absl::Duration interval_;
  const size_t max_keys_;
  mutable std::mutex mu_;
  absl::Time start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time last_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::map<Key, Bucket> keys_ ABSL_GUARDED_BY(mu_);
  bool other_seen_ ABSL_GUARDED_BY(mu_) = false;
  Bucket other_ ABSL_GUARDED_BY(mu_);
  uint64_t interval_total_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t total_ ABSL_GUARDED_BY(mu_) = 0;
  prometheus::Family<prometheus::Counter>* counter_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace roced::agent
