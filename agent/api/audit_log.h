// The audit trail, in two files kept apart so that no volume of refused
// calls can push a change out of the trail:
//
//   <state-dir>/audit.log     every mutating call the gate let through
//                             (ApplyConfig, ConfirmConfig, RunProbe,
//                             OpenEndpoint), whatever the handler answered:
//                             one JSON line each, with who made it.
//   <state-dir>/refusals.log  refused calls, aggregated (RefusalLog,
//                             refusal_log.h): the first refusal of each
//                             (identity, method, code) in a 60 s interval
//                             at once, then one summary line per key per
//                             interval; at most 32 keys per interval, the
//                             rest counted in one "other" bucket.
//
//   {"time":"2026-12-01T16:30:00.123Z","identity":"controller.example",
//    "transport":"tls","roles":"admin","method":"/roced.v1.Agent/ApplyConfig",
//    "code":"OK","generation":7,"summary":"eth0 qos.pfc: 3 -> 3,4"}
//
// Retention (what a node keeps; ship the files or the journal for more):
//   audit.log     rotated to audit.log.1 (replacing the one before) when a
//                 line would take it past 16 MiB: at most 32 MiB on disk;
//                 no age limit (a change is dropped only by 16 MiB of newer
//                 changes, however old it is).
//   refusals.log  rotated to refusals.log.1 past 4 MiB: at most 8 MiB; a
//                 file whose last write is older than 30 days is deleted
//                 (checked at each write).
//
// Threads: thread-safe (each file one mutex, a leaf). A write that fails is
// logged (once per failure streak) and counted; the call it records is not
// failed by it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"

namespace roced::agent {

struct AuditRecord {
  absl::Time time;
  std::string identity;
  std::string transport;  // "tls", "unix", "insecure"
  std::string roles;
  std::string method;
  std::string code;  // gRPC status code name
  std::string message;  // the error, when not OK
  uint64_t generation = 0;
  std::string summary;
};

// The record as one JSON line (with the newline). Strings are escaped and
// cut (identity, message and summary at 2 KiB each).
std::string AuditLine(const AuditRecord& record);
// A refusal summary: AuditLine(record) with "repeated":N (the refusals of
// its key after the first, logged one) and "since" (the interval's start;
// record.time is its end).
std::string AuditSummaryLine(const AuditRecord& record, uint64_t repeated, absl::Time since);

// An append-only file of lines bounded by size and age: a line that would
// take it past max_bytes first renames it to <path>.1 (replacing the one
// before); with max_age set, a file (current or .1) last written longer ago
// than that is deleted before the next write. Created 0600; a symlink at
// the path is refused (O_NOFOLLOW), not written through.
class LineFile {
 public:
  // `path` empty: lines go nowhere. max_age zero: no age limit.
  LineFile(std::string path, uint64_t max_bytes, absl::Duration max_age = absl::ZeroDuration())
      : path_(std::move(path)), max_bytes_(max_bytes), max_age_(max_age) {}

  // `now` is the record's time, for the age limit.
  void Append(const std::string& line, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Lines that could not be written.
  uint64_t failures() const ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& path() const { return path_; }

 private:
  void DropAged(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const uint64_t max_bytes_;
  const absl::Duration max_age_;
  mutable std::mutex mu_;
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  bool failing_ ABSL_GUARDED_BY(mu_) = false;
};

class RefusalLog;

struct AuditLogOptions {
  static constexpr uint64_t kDefaultMaxBytes = 16 << 20;
  static constexpr uint64_t kDefaultRefusalMaxBytes = 4 << 20;
  // audit.log; refusals.log goes beside it. Empty: no files (refusals are
  // still aggregated, logged and counted).
  std::string path;
  uint64_t max_bytes = kDefaultMaxBytes;
  uint64_t refusal_max_bytes = kDefaultRefusalMaxBytes;
  absl::Duration refusal_max_age = absl::Hours(24 * 30);
  absl::Duration refusal_interval = absl::Seconds(60);
  size_t refusal_max_keys = 32;
};

class AuditLog {
 public:
  static constexpr uint64_t kDefaultMaxBytes = AuditLogOptions::kDefaultMaxBytes;
  explicit AuditLog(std::string path, uint64_t max_bytes = kDefaultMaxBytes);
  explicit AuditLog(AuditLogOptions options);
  // Writes the refusal summaries of the interval under way.
  ~AuditLog();

  // A call the gate let through (audit.log).
  void Append(const AuditRecord& record);
  // A call the gate refused: aggregated and rate-limited (refusals.log, the
  // WARN line) and counted in roced_api_refusals_total.
  void Refuse(const AuditRecord& record);
  // Writes the summaries of the interval under way (at shutdown; tests).
  void FlushRefusals(absl::Time now);
  // Counts refusals in roced_api_refusals_total{method,code} (a family of
  // metrics::ApiFamilies, which must outlive this).
  void RegisterMetrics(prometheus::Family<prometheus::Counter>* refusals);

  // Change lines that could not be written.
  uint64_t failures() const { return changes_.failures(); }
  const std::string& path() const { return changes_.path(); }
  const RefusalLog& refusals() const { return *refusals_; }

 private:
  LineFile changes_;
  LineFile refusal_file_;
  std::unique_ptr<RefusalLog> refusals_;
};

}  // namespace roced::agent
