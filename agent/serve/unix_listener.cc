#include "agent/serve/unix_listener.h"

#include <grp.h>
#include <grpcpp/server.h>
#include <grpcpp/server_posix.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "util/thread_name.h"
#include "util/log.h"

namespace roced::agent {

absl::StatusOr<gid_t> LookUpGroup(const std::string& name) {
  uint32_t number = 0;
  if (absl::SimpleAtoi(name, &number)) return static_cast<gid_t>(number);
  struct group g {};
  struct group* found = nullptr;
  std::vector<char> buf(16384);
  if (getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return absl::NotFoundError(absl::StrCat("--socket-group ", name, ": no such group"));
  }
  return found->gr_gid;
}

namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::UnavailableError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// The credentials of the process on the other end of `fd`.
std::optional<UnixPeer> ReadPeer(int fd) {
  struct ucred cred {};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  UnixPeer peer{cred.uid, cred.gid, cred.pid, {}};
  std::vector<gid_t> groups(64);
  socklen_t glen = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen) != 0 && errno == ERANGE) {
    groups.resize(glen / sizeof(gid_t));
    glen = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &glen) != 0) glen = 0;
  }
  groups.resize(glen / sizeof(gid_t));
  peer.groups = std::move(groups);
  return peer;
}

}  // namespace

absl::Status UnixListener::Bind() {
  const std::string& path = options_.path;
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--socket ", path, ": longer than ", sizeof(addr.sun_path) - 1, " bytes"));
  }
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("cannot create socket directory ", dir.string(), ": ", ec.message()));
  ::unlink(path.c_str());
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) return Errno("cannot create socket", path);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // The socket is created 0600 and opened up only once owner and mode are
  // right, so nobody connects in between.
  mode_t old = ::umask(0177);
  int bound = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::umask(old);
  if (bound != 0 || ::listen(listen_fd_, 64) != 0) return Errno("cannot listen on", path);
  if (options_.group != static_cast<gid_t>(-1) && ::chown(path.c_str(), static_cast<uid_t>(-1), options_.group) != 0) {
    return Errno("cannot give the socket to its group:", path);
  }
  if (::chmod(path.c_str(), options_.others_may_connect ? 0666 : 0660) != 0) return Errno("cannot chmod", path);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return Errno("cannot create eventfd for", path);
  return absl::OkStatus();
}

void UnixListener::Serve(grpc::Server* server) {
  thread_ = std::thread([this, server] { AcceptLoop(server); });
}

void UnixListener::AcceptLoop(grpc::Server* server) {
  util::NameThisThread("roced-unix");
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      LOG_ERROR << "unix socket: poll: " << std::strerror(errno);
      return;
    }
    if (fds[1].revents != 0) return;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // Out of descriptors (EMFILE, ENFILE) or memory: the connection stays
      // queued and poll() would return at once; wait instead of spinning.
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) ::poll(nullptr, 0, 100);
      continue;
    }
    std::optional<UnixPeer> peer = ReadPeer(fd);
    if (!peer) {
      LOG_WARNING << "unix socket: cannot read the caller's credentials: " << std::strerror(errno);
      ::close(fd);
      continue;
    }
    options_.peers->Set(fd, *std::move(peer));
    grpc::AddInsecureChannelFromFd(server, fd);
  }
}

void UnixListener::Stop() {
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof(one)) < 0) {
      LOG_WARNING << "unix socket: wake: " << std::strerror(errno);
    }
  }
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    ::unlink(options_.path.c_str());
  }
  if (wake_fd_ >= 0) {
    ::close(wake_fd_);
    wake_fd_ = -1;
  }
}

}  // namespace roced::agent
