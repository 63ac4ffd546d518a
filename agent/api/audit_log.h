// The audit trail: one JSON object per line for every mutating call
// (ApplyConfig, ConfirmConfig, RunProbe, OpenEndpoint), allowed or not,
// with who made it. Size-bounded: past max_bytes the file is renamed to
// audit.log.1 (replacing the one before) and a new one started, so the
// trail costs at most twice max_bytes on disk.
//
//   {"time":"2026-12-01T16:30:00.123Z","identity":"controller.example",
//    "transport":"tls","roles":"admin","method":"/roced.v1.Agent/ApplyConfig",
//    "code":"OK","generation":7,"summary":"eth0 qos.pfc: 3 -> 3,4"}
//
// Threads: thread-safe (one mutex, a leaf). A write that fails is logged
// (once per failure streak) and counted; the call it records is not failed
// by it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

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

class AuditLog {
 public:
  static constexpr uint64_t kDefaultMaxBytes = 16 << 20;
  // `path` empty: records go nowhere (tests, no state directory).
  explicit AuditLog(std::string path, uint64_t max_bytes = kDefaultMaxBytes)
      : path_(std::move(path)), max_bytes_(max_bytes) {}

  void Append(const AuditRecord& record) ABSL_LOCKS_EXCLUDED(mu_);
  // Lines that could not be written.
  uint64_t failures() const ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  bool failing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace roced::agent
