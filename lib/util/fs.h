// Small filesystem helpers for kernel pseudo-files (sysfs, procfs, configfs).
// All functions are thread-safe and return NOT_FOUND when the path does not
// exist, so callers can tell "absent" from "unreadable".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace roced::util {

// Reads a small file whole; trailing whitespace (the kernel's newline) is
// stripped.
absl::StatusOr<std::string> ReadFileTrimmed(const std::string& path);

// The most ReadFile reads of a kernel pseudo-file (a sysfs attribute is at
// most a page; the procfs files read are a line or two).
inline constexpr size_t kMaxPseudoFileBytes = 1u << 20;

// Reads a whole kernel pseudo-file as is (sysfs, procfs, configfs under
// their configurable roots; their sizes say nothing, so no fstat check).
// Opened O_NONBLOCK, so a FIFO planted under a root does not block; more
// than kMaxPseudoFileBytes is refused with INVALID_ARGUMENT ("<path> holds
// more than N bytes"), so /dev/zero under a root does not exhaust memory.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Reads a whole file that an operator or the agent itself wrote (configs,
// state files, `-f FILE` inputs), bounded and checked: opened with
// O_RDONLY|O_CLOEXEC|O_NONBLOCK (a FIFO does not block), symlinks followed
// but the target checked (fstat after open). Anything that is not a regular
// file is refused with INVALID_ARGUMENT ("<what> <path> is a <type>; a
// regular file is required"); a size above `max_bytes` is refused before a
// byte is read ("<what> <path> is N bytes; at most M are read"), and at most
// max_bytes+1 bytes are ever read (a file that grows meanwhile is refused
// the same way). Open and read errors map through ErrnoToStatus (a missing
// file is NOT_FOUND).
// The most ReadRegularFile reads of a file the agent writes and reads back
// itself (state directory files, probe baselines): the largest, accepted.json,
// holds one config (at most 1 MiB of YAML) as JSON, far below this.
inline constexpr size_t kMaxStateFileBytes = 16u << 20;

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes, const std::string& what);

// Writes `content` to an existing kernel attribute file (no create/truncate
// semantics beyond what the kernel gives a single write()).
absl::Status WriteAttribute(const std::string& path, const std::string& content);

// Writes `content` to `path` atomically: temp file in the same directory
// (`<path>.tmp.<pid>`, created with O_CREAT|O_EXCL|O_NOFOLLOW after a stale
// one is removed), fsync, rename.
absl::Status WriteFileAtomic(const std::string& path, const std::string& content);

// Names in a directory, sorted, without "." and "..".
absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path);

// The target of a symlink, as stored.
absl::StatusOr<std::string> ReadLink(const std::string& path);

bool PathExists(const std::string& path);

// Maps an errno to an absl status code (ENOENT -> NOT_FOUND, EACCES/EPERM ->
// PERMISSION_DENIED, EOPNOTSUPP -> UNIMPLEMENTED, EAGAIN/EBUSY -> UNAVAILABLE,
// EINVAL -> INVALID_ARGUMENT, other -> INTERNAL) with `what` and strerror.
absl::Status ErrnoToStatus(int err, const std::string& what);

// This host's name (gethostname), or `fallback` when it cannot be had.
std::string Hostname(const std::string& fallback = "");

}  // namespace roced::util
