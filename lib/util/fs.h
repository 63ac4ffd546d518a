// Small filesystem helpers for kernel pseudo-files (sysfs, procfs, configfs).
// All functions are thread-safe and return NOT_FOUND when the path does not
// exist, so callers can tell "absent" from "unreadable".
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace roced::util {

// Reads a small file whole; trailing whitespace (the kernel's newline) is
// stripped.
absl::StatusOr<std::string> ReadFileTrimmed(const std::string& path);

// Reads a whole file as is (config files).
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `content` to an existing kernel attribute file (no create/truncate
// semantics beyond what the kernel gives a single write()).
absl::Status WriteAttribute(const std::string& path, const std::string& content);

// Writes `content` to `path` atomically: temp file in the same directory,
// fsync, rename.
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
