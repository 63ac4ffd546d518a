#include "access/tls_mirror.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "access/grpc_tls.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/status_macros.h"
#include "util/thread_name.h"

namespace roced::access {

namespace {

constexpr std::array<const char*, 3> kCopyNames = {"cert.pem", "key.pem", "ca.pem"};

std::array<const std::string*, 3> Fields(const TlsFiles& f) { return {&f.cert, &f.key, &f.ca}; }
std::array<std::string*, 3> Fields(TlsFiles& f) { return {&f.cert, &f.key, &f.ca}; }

// `dir` as a directory of roced's own: made 0700 when missing; an existing
// one must be a directory (not a symlink to one) owned by this process's
// user (another user who made it first could swap the CA copy in it).
// FAILED_PRECONDITION for those two refusals; the filesystem's errors as
// util::ErrnoToStatus maps them.
absl::Status MakePrivateDir(const std::string& dir) {
  std::error_code ignored;  // a missing parent fails the mkdir below, named
  std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ignored);
  if (::mkdir(dir.c_str(), 0700) == 0) return absl::OkStatus();
  if (errno != EEXIST) return util::ErrnoToStatus(errno, "create TLS copy directory " + dir);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return util::ErrnoToStatus(errno, "stat " + dir);
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "TLS copy directory ", dir, " exists and is not a directory", S_ISLNK(st.st_mode) ? " (a symlink)" : "",
        "; remove it"));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat("TLS copy directory ", dir, " is owned by uid ", st.st_uid,
                                                      ", not roced's (uid ", ::geteuid(), "); remove it"));
  }
  if (::chmod(dir.c_str(), 0700) != 0) return util::ErrnoToStatus(errno, "chmod 0700 " + dir);
  return absl::OkStatus();
}

absl::StatusOr<std::string> MakeTempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/roced-tls.XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) return util::ErrnoToStatus(errno, "create a TLS copy directory");
  return pattern;
}

}  // namespace

TlsMirror::TlsMirror(const TlsFiles& sources, Options options) : sources_(sources), options_(std::move(options)) {
  auto from = Fields(sources_);
  auto to = Fields(copies_);
  for (size_t i = 0; i < kCopyNames.size(); ++i) {
    if (!from[i]->empty()) *to[i] = absl::StrCat(options_.dir, "/", kCopyNames[i]);
  }
}

absl::StatusOr<std::unique_ptr<TlsMirror>> TlsMirror::Create(const TlsFiles& sources, Options options) {
  bool temporary = options.dir.empty();
  if (!temporary) {
    absl::Status s = MakePrivateDir(options.dir);
    if (absl::IsFailedPrecondition(s)) return s;
    if (!s.ok()) {  // a read-only or full state directory: copies elsewhere
      LOG_WARNING << s.message() << "; the TLS copies go to a temporary directory instead";
      temporary = true;
    }
  }
  if (temporary) {
    ASSIGN_OR_RETURN(options.dir, MakeTempDir());
  }
  std::unique_ptr<TlsMirror> mirror(new TlsMirror(sources, std::move(options)));
  mirror->temporary_dir_ = temporary;
  Stamps stamps = mirror->StampSources();
  if (absl::Status s = mirror->CopyAll(); !s.ok()) return s;
  mirror->copied_ = stamps;
  mirror->thread_ = std::thread([m = mirror.get()] { m->Loop(); });
  return mirror;
}

TlsMirror::~TlsMirror() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (const std::string* copy : Fields(copies_)) {
    if (!copy->empty()) ::unlink(copy->c_str());
  }
  if (temporary_dir_) ::rmdir(options_.dir.c_str());
}

TlsMirror::Stamps TlsMirror::StampSources() const {
  Stamps stamps;
  auto from = Fields(sources_);
  for (size_t i = 0; i < stamps.size(); ++i) {
    if (from[i]->empty()) continue;
    struct stat st {};
    if (::stat(from[i]->c_str(), &st) != 0) {
      stamps[i].size = -2;  // gone: differs from every stamp a file has
      continue;
    }
    stamps[i] = {st.st_dev, st.st_ino, st.st_size,
                 static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  }
  return stamps;
}

// Read (bounded), write as "<copy>.new", check the new set where it lies
// (the bytes checked are the bytes gRPC will read), then rename each over
// its copy. The error names the flag and the source file, as start-up does.
absl::Status TlsMirror::CopyAll() {
  auto from = Fields(sources_);
  auto to = Fields(copies_);
  TlsFiles staged;
  auto stage = Fields(staged);
  const std::array<const std::string*, 3> flags = {&options_.names.cert, &options_.names.key, &options_.names.ca};
  std::vector<std::pair<std::string, std::string>> rename_back;  // staged path -> source path, for messages
  absl::Status result = absl::OkStatus();
  for (size_t i = 0; i < kCopyNames.size() && result.ok(); ++i) {
    if (from[i]->empty()) continue;
    absl::StatusOr<std::string> pem = ReadPem(*from[i]);
    if (!pem.ok()) {
      result = absl::Status(pem.status().code(), absl::StrCat(*flags[i], " ", *from[i], ": ", pem.status().message()));
      break;
    }
    *stage[i] = *to[i] + ".new";
    rename_back.emplace_back(*stage[i], *from[i]);
    result = util::WriteFileAtomic(*stage[i], *pem);
  }
  if (result.ok()) {
    result = CheckTlsFiles(staged, options_.names, options_.need_identity, absl::Now());
    if (!result.ok()) result = absl::Status(result.code(), absl::StrReplaceAll(result.message(), rename_back));
  }
  for (size_t i = 0; i < kCopyNames.size(); ++i) {
    if (stage[i]->empty()) continue;
    if (result.ok() && ::rename(stage[i]->c_str(), to[i]->c_str()) != 0) {
      result = util::ErrnoToStatus(errno, absl::StrCat("rename ", *stage[i], " to ", *to[i]));
    }
    ::unlink(stage[i]->c_str());  // left only when refused or a rename failed
  }
  return result;
}

absl::Status TlsMirror::Refresh() {
  Stamps stamps = StampSources();
  // A copy removed under roced (a tmp cleaner, a hand): the directory made
  // again and the sources copied again, changed or not.
  bool copies_gone = false;
  for (const std::string* copy : Fields(copies_)) copies_gone |= !copy->empty() && !util::PathExists(*copy);
  if (copies_gone) {
    if (absl::Status s = MakePrivateDir(options_.dir); !s.ok()) {
      LOG_WARNING << "TLS copies gone and cannot be made again (new connections fail once gRPC re-reads): "
                  << s.message();
      return s;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!copies_gone && (stamps == copied_ || stamps == refused_)) return absl::OkStatus();
  }
  absl::Status s = CopyAll();
  std::lock_guard<std::mutex> lock(mu_);
  if (s.ok()) {
    copied_ = stamps;
    refused_ = {};
    ++replacements_;
    LOG_INFO << "TLS files changed: new gRPC connections use them within "
             << kTlsReloadIntervalSeconds << " s";
  } else {
    refused_ = stamps;
    LOG_WARNING << "TLS files changed but were not taken (the previous ones stay in use until they "
                   "change again): "
                << s.message();
  }
  return s;
}

int TlsMirror::replacements() const {
  std::lock_guard<std::mutex> lock(mu_);
  return replacements_;
}

void TlsMirror::Loop() {
  util::NameThisThread("roced-tls");
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, absl::ToChronoMilliseconds(options_.interval), [this] { return stop_; })) {
    lock.unlock();
    (void)Refresh();
    lock.lock();
  }
}

}  // namespace roced::access
