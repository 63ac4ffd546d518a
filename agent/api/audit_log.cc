#include "agent/api/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "agent/api/refusal_log.h"
#include "util/log.h"

namespace roced::agent {

namespace {

constexpr size_t kMaxFieldBytes = 2048;

// A JSON string literal of `text` (at most kMaxFieldBytes of it, then
// "..."): quotes, backslashes, control characters and every byte >= 0x80
// escaped, so the line is valid JSON (and one line) whatever a caller sent.
std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  const bool cut = text.size() > kMaxFieldBytes;
  if (cut) text = text.substr(0, kMaxFieldBytes);
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f || c >= 0x80) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  if (cut) out += "...";
  out += "\"";
  return out;
}

}  // namespace

std::string AuditLine(const AuditRecord& r) {
  std::string line = absl::StrCat(
      "{\"time\":", JsonString(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", r.time, absl::UTCTimeZone())),
      ",\"identity\":", JsonString(r.identity), ",\"transport\":", JsonString(r.transport),
      ",\"roles\":", JsonString(r.roles), ",\"method\":", JsonString(r.method), ",\"code\":", JsonString(r.code));
  if (!r.message.empty()) absl::StrAppend(&line, ",\"message\":", JsonString(r.message));
  if (r.generation != 0) absl::StrAppend(&line, ",\"generation\":", r.generation);
  if (!r.summary.empty()) absl::StrAppend(&line, ",\"summary\":", JsonString(r.summary));
  line += "}\n";
  return line;
}

std::string AuditSummaryLine(const AuditRecord& record, uint64_t repeated, absl::Time since) {
  std::string line = AuditLine(record);
  line.resize(line.size() - 2);  // "}\n"
  absl::StrAppend(&line, ",\"repeated\":", repeated, ",\"since\":",
                  JsonString(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", since, absl::UTCTimeZone())), "}\n");
  return line;
}

void LineFile::DropAged(absl::Time now) {
  for (const std::string& p : {path_ + ".1", path_}) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (absl::FromTimeT(st.st_mtime) + max_age_ < now && ::unlink(p.c_str()) != 0) {
      LOG_WARNING << "audit log: cannot delete " << p << " (older than " << max_age_ << "): " << std::strerror(errno);
    }
  }
}

void LineFile::Append(const std::string& line, absl::Time now) {
  if (path_.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (max_age_ > absl::ZeroDuration()) DropAged(now);
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) + line.size() > max_bytes_) {
    const std::string old = path_ + ".1";
    if (::rename(path_.c_str(), old.c_str()) != 0) {
      LOG_WARNING << "audit log: cannot rotate " << path_;
    }
  }
  // O_NOFOLLOW: a symlink planted at the path is refused, not written
  // through; O_NONBLOCK: a FIFO there is refused (ENXIO without a reader,
  // else not regular below), not waited on.
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    ::close(fd);
    fd = -1;
    errno = EINVAL;
  }
  ssize_t written = fd < 0 ? -1 : ::write(fd, line.data(), line.size());
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (written == static_cast<ssize_t>(line.size())) {
    failing_ = false;
    return;
  }
  ++failures_;
  if (!failing_) {
    LOG_ERROR << "audit log: cannot write " << path_ << ": "
              << (err == ELOOP    ? "it is a symlink; a regular file is required (symlinks are refused)"
                  : err == EINVAL ? "it is not a regular file; a regular file is required"
                                  : std::strerror(err));
  }
  failing_ = true;
}

uint64_t LineFile::failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failures_;
}

namespace {

std::string RefusalPath(const std::string& audit_path) {
  if (audit_path.empty()) return "";
  const size_t slash = audit_path.rfind('/');
  return (slash == std::string::npos ? std::string() : audit_path.substr(0, slash + 1)) + "refusals.log";
}

}  // namespace

AuditLog::AuditLog(std::string path, uint64_t max_bytes)
    : AuditLog([&] {
        AuditLogOptions o;
        o.path = std::move(path);
        o.max_bytes = max_bytes;
        return o;
      }()) {}

AuditLog::AuditLog(AuditLogOptions options)
    : changes_(options.path, options.max_bytes),
      refusal_file_(RefusalPath(options.path), options.refusal_max_bytes, options.refusal_max_age),
      refusals_(std::make_unique<RefusalLog>(&refusal_file_, options.refusal_interval, options.refusal_max_keys)) {}

AuditLog::~AuditLog() {
  if (refusals_->last() != absl::InfinitePast()) refusals_->Flush(absl::Now());
}

void AuditLog::Append(const AuditRecord& record) { changes_.Append(AuditLine(record), record.time); }

void AuditLog::Refuse(const AuditRecord& record) { refusals_->Refuse(record); }

void AuditLog::FlushRefusals(absl::Time now) { refusals_->Flush(now); }

void AuditLog::RegisterMetrics(prometheus::Family<prometheus::Counter>* refusals) {
  refusals_->RegisterMetrics(refusals);
}

}  // namespace roced::agent
