#include "agent/api/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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

void AuditLog::Append(const AuditRecord& record) {
  if (path_.empty()) return;
  const std::string line = AuditLine(record);
  std::lock_guard<std::mutex> lock(mu_);
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) + line.size() > max_bytes_) {
    const std::string old = path_ + ".1";
    if (::rename(path_.c_str(), old.c_str()) != 0) {
      LOG_WARNING << "audit log: cannot rotate " << path_;
    }
  }
  // O_NOFOLLOW: a symlink planted at the path is refused, not written through.
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
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
              << (err == ELOOP ? "it is a symlink; a regular file is required (symlinks are refused)"
                               : std::strerror(err));
  }
  failing_ = true;
}

uint64_t AuditLog::failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failures_;
}

}  // namespace roced::agent
