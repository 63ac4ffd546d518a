#include "util/fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "util/escape.h"

namespace roced::util {

absl::Status ErrnoToStatus(int err, const std::string& what) {
  std::string msg = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ENXIO:
      return absl::NotFoundError(msg);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(msg);
    case EOPNOTSUPP:
      return absl::UnimplementedError(msg);
    case EAGAIN:
    case EBUSY:
    case EINTR:
      return absl::UnavailableError(msg);
    case EINVAL:
    case ERANGE:
      return absl::InvalidArgumentError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat("open ", path));
  std::string out;
  char buf[4096];
  while (out.size() <= kMaxPseudoFileBytes) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoToStatus(err, absl::StrCat("read ", path));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (out.size() > kMaxPseudoFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(EscapeForLog(path), " holds more than ", kMaxPseudoFileBytes, " bytes; at most that is read"));
  }
  return out;
}

namespace {

std::string FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "directory";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISFIFO(mode)) return "FIFO";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISLNK(mode)) return "symlink";
  return "file of unknown type";
}

absl::Status TooLarge(const std::string& what, const std::string& path, uint64_t size, size_t max_bytes) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " ", path, " is ", size, " bytes; at most ", max_bytes, " are read"));
}

// Reads at most max_bytes+1 bytes from fd into *out.
absl::Status ReadBounded(int fd, const std::string& path, size_t max_bytes, std::string* out) {
  char buf[4096];
  while (out->size() <= max_bytes) {
    const size_t want = std::min(sizeof(buf), max_bytes + 1 - out->size());
    ssize_t n = ::read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, absl::StrCat("read ", path));
    }
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadRegularFd(int fd, const std::string& path, size_t max_bytes,
                                          const std::string& what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ErrnoToStatus(errno, absl::StrCat("stat ", path));
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, " is a ", FileTypeName(st.st_mode), "; a regular file is required"));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return TooLarge(what, path, static_cast<uint64_t>(st.st_size), max_bytes);
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  absl::Status read = ReadBounded(fd, path, max_bytes, &out);
  if (!read.ok()) return read;
  if (out.size() > max_bytes) return TooLarge(what, path, out.size(), max_bytes);
  return out;
}

}  // namespace

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, size_t max_bytes, const std::string& what) {
  const std::string shown = EscapeForLog(path);  // a path may hold control characters
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat(what, " ", shown));
  absl::StatusOr<std::string> out = ReadRegularFd(fd, shown, max_bytes, what);
  ::close(fd);
  return out;
}

absl::StatusOr<std::string> ReadFileTrimmed(const std::string& path) {
  auto content = ReadFile(path);
  if (!content.ok()) return content.status();
  return std::string(absl::StripTrailingAsciiWhitespace(*content));
}

absl::Status WriteAttribute(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat("open ", path));
  ssize_t n = ::write(fd, content.data(), content.size());
  int err = errno;
  ::close(fd);
  if (n < 0) return ErrnoToStatus(err, absl::StrCat("write ", path));
  if (static_cast<size_t>(n) != content.size()) {
    return absl::InternalError(absl::StrCat("short write to ", path));
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomic(const std::string& path, const std::string& content) {
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  // A stale temp of an earlier process with this pid (or a planted symlink)
  // goes first; O_EXCL|O_NOFOLLOW then creates a fresh file or fails.
  if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) return ErrnoToStatus(errno, absl::StrCat("remove ", tmp));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat("create ", tmp));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return ErrnoToStatus(err, absl::StrCat("write ", tmp));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return ErrnoToStatus(err, absl::StrCat("fsync ", tmp));
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoToStatus(err, absl::StrCat("rename ", tmp, " to ", path));
  }
  // The rename is durable only once the directory entry is on disk.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return ErrnoToStatus(errno, absl::StrCat("open ", dir));
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0) return ErrnoToStatus(err, absl::StrCat("fsync ", dir));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return ErrnoToStatus(errno, absl::StrCat("opendir ", path));
  std::vector<std::string> names;
  while (struct dirent* ent = ::readdir(dir)) {
    std::string name = ent->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(std::move(name));
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::string> ReadLink(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return ErrnoToStatus(errno, absl::StrCat("readlink ", path));
  return std::string(buf, static_cast<size_t>(n));
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string Hostname(const std::string& fallback) {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return fallback;
  return buf;
}

}  // namespace roced::util
