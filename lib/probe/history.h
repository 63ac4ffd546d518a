// Recent probe results, kept per (peer, kind) in a bounded ring, for
// ListProbeResults and the per-peer summary in GetState.
//
// Thread-safe.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <mutex>

#include "absl/base/thread_annotations.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::probe {

class ProbeHistory {
 public:
  // Keeps the newest `per_key_capacity` results of each (peer, kind), for
  // at most `max_keys` (peer, kind) pairs: a new pair past that drops the
  // one whose latest result is oldest (probes to ad-hoc addresses cannot
  // grow the history without bound; the config's peers, at most 1024 with
  // two kinds, fit).
  static constexpr size_t kDefaultMaxKeys = 2 * 1024 + 128;
  explicit ProbeHistory(size_t per_key_capacity = 100, size_t max_keys = kDefaultMaxKeys)
      : capacity_(per_key_capacity), max_keys_(max_keys) {}

  void Add(const roced::v1::ProbeResult& result) ABSL_LOCKS_EXCLUDED(mu_);

  // Newest first (by started_at). `peer` empty means every peer, kind
  // PROBE_KIND_UNSPECIFIED every kind; `limit` 0 means all that are kept.
  std::vector<roced::v1::ProbeResult> List(const std::string& peer, roced::v1::ProbeKind kind,
                                           size_t limit) const ABSL_LOCKS_EXCLUDED(mu_);

  // The latest result of every (peer, kind), as GetState shows it, ordered
  // by peer then kind.
  std::vector<roced::v1::ProbeSummary> Summaries() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const size_t capacity_;
  const size_t max_keys_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, std::deque<roced::v1::ProbeResult>> rings_
      ABSL_GUARDED_BY(mu_);
};

// The summary GetState shows for one result.
roced::v1::ProbeSummary SummaryOf(const roced::v1::ProbeResult& result);

}  // namespace roced::probe
