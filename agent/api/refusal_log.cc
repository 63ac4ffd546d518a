#include "agent/api/refusal_log.h"

#include "absl/strings/str_cat.h"
#include "access/roles.h"
#include "util/escape.h"
#include "util/log.h"

namespace roced::agent {

namespace {

constexpr size_t kMaxIdentityBytes = 256;
constexpr size_t kMaxMessageBytes = 512;
constexpr char kOtherIdentity[] = "(other callers)";

std::string Cut(const std::string& text, size_t max_bytes) {
  return text.size() <= max_bytes ? text : text.substr(0, max_bytes) + "...";
}

}  // namespace

void RefusalLog::RegisterMetrics(prometheus::Family<prometheus::Counter>* refusals) {
  std::lock_guard<std::mutex> lock(mu_);
  counter_ = refusals;
}

void RefusalLog::Refuse(const AuditRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  ++total_;
  last_ = record.time;
  if (counter_ != nullptr) {
    // The method is the handler's constant; an unknown one is one label value.
    const std::string label = access::FindMethod(record.method) ? record.method.substr(1) : "unknown";
    counter_->Add({{"method", label}, {"code", record.code}}).Increment();
  }
  if (start_ == absl::InfinitePast()) {
    start_ = record.time;
  } else if (record.time >= start_ + interval_) {
    EndInterval(record.time);
    start_ = record.time;
  }
  ++interval_total_;
  Key key{Cut(record.identity, kMaxIdentityBytes), record.method, record.code};
  auto it = keys_.find(key);
  if (it != keys_.end()) {
    ++it->second.repeated;
    return;
  }
  if (keys_.size() < max_keys_) {
    keys_.emplace(std::move(key), Bucket{record.transport, record.roles, 0});
    WriteFirst(record);
    return;
  }
  if (other_seen_) {
    ++other_.repeated;
    return;
  }
  other_seen_ = true;
  AuditRecord other{record.time, kOtherIdentity, "", "none", "*", "*",
                    absl::StrCat("more than ", max_keys_, " callers, methods and codes refused within ",
                                 absl::FormatDuration(interval_), "; the rest of this interval is counted here"),
                    0, ""};
  file_->Append(AuditLine(other), record.time);
  LOG_WARNING << "refused calls from more than " << max_keys_ << " callers, methods and codes within "
              << absl::FormatDuration(interval_) << "; further ones are counted, not logged, until it ends";
}

void RefusalLog::WriteFirst(const AuditRecord& record) {
  AuditRecord cut = record;
  cut.identity = Cut(record.identity, kMaxIdentityBytes);
  cut.message = Cut(record.message, kMaxMessageBytes);
  file_->Append(AuditLine(cut), record.time);
  LOG_WARNING << "refused " << record.method << " from " << util::EscapeForLog(record.identity, 128) << ": "
              << util::EscapeForLog(record.message, kMaxMessageBytes) << " (repeats within "
              << absl::FormatDuration(interval_) << " are counted, not logged)";
}

void RefusalLog::WriteSummary(const Key& key, const Bucket& bucket, absl::Time now) {
  const AuditRecord summary{now, std::get<0>(key), bucket.transport, bucket.roles, std::get<1>(key), std::get<2>(key),
                            "", 0, ""};
  file_->Append(AuditSummaryLine(summary, bucket.repeated, start_), now);
}

void RefusalLog::EndInterval(absl::Time now) {
  uint64_t repeated = 0;
  for (const auto& [key, bucket] : keys_) {
    if (bucket.repeated == 0) continue;
    WriteSummary(key, bucket, now);
    repeated += bucket.repeated;
  }
  if (other_seen_) {
    if (other_.repeated > 0) WriteSummary(Key{kOtherIdentity, "*", "*"}, Bucket{"", "none", other_.repeated}, now);
    repeated += other_.repeated;
  }
  if (repeated > 0) {
    LOG_WARNING << "refused " << interval_total_ << " calls in the last " << absl::FormatDuration(now - start_)
                << " (" << keys_.size() << (other_seen_ ? "+ " : " ") << "callers, methods and codes; " << repeated
                << " not logged one by one)"
                << (file_->path().empty() ? std::string() : absl::StrCat("; counts per caller in ", file_->path()));
  }
  keys_.clear();
  other_seen_ = false;
  other_ = Bucket{};
  interval_total_ = 0;
}

void RefusalLog::Flush(absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (start_ == absl::InfinitePast()) return;
  EndInterval(now);
  start_ = absl::InfinitePast();
}

uint64_t RefusalLog::total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

absl::Time RefusalLog::last() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

}  // namespace roced::agent
