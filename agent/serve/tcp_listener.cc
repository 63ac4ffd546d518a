#include "agent/serve/tcp_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/server_builder.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "util/fd_limit.h"
#include "util/log.h"
#include "util/thread_name.h"

namespace roced::agent {
namespace {

constexpr int kRetryMs = 100;      // after an accept failed for want of resources
constexpr int kRecheckMs = 1000;   // while unhealthy and quiet
constexpr int kListenBacklog = 1024;
constexpr absl::Duration kPerPeerLogEvery = absl::Seconds(10);

absl::Status ListenError(const std::string& listen, const std::string& why) {
  return absl::UnavailableError(absl::StrCat("cannot listen for gRPC on ", listen, ": ", why));
}

struct HostPort {
  std::string host;  // without brackets; "" for the wildcard
  std::string port;
};

absl::Status SplitListen(const std::string& listen, HostPort* out) {
  const size_t colon = listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--grpc-listen ", listen, ": not HOST:PORT (PORT 0-65535; an IPv6 address in brackets, [::1]:7471)"));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "::" || host == "0.0.0.0") host.clear();
  *out = HostPort{host, absl::StrCat(port)};
  return absl::OkStatus();
}

ino_t InodeOf(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

// The caller's address, IPv4-mapped IPv6 addresses as IPv4 ("10.0.0.7",
// "fd00::7"): what the per-address cap counts by.
std::string HostOf(const sockaddr_storage& addr) {
  char text[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, text, sizeof(text));
  } else if (addr.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a)) {
      ::inet_ntop(AF_INET, &a.s6_addr[12], text, sizeof(text));
    } else {
      ::inet_ntop(AF_INET6, &a, text, sizeof(text));
    }
  }
  return text;
}

bool IsResourceShortage(int err) { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM; }

}  // namespace

int DefaultTcpConnectionCap() {
  const uint64_t quarter = util::SoftFdLimit() / 4;
  return static_cast<int>(std::clamp<uint64_t>(quarter, 16, kMaxTcpConnections));
}

TcpListener::TcpListener(TcpListenerOptions options)
    : options_(std::move(options)),
      cap_(options_.max_connections > 0 ? options_.max_connections : DefaultTcpConnectionCap()),
      per_peer_cap_(options_.max_per_address > 0 ? options_.max_per_address : std::max(4, cap_ / 8)) {}

int TcpListener::BindOne(const addrinfo& ai, bool dual_stack) {
  const int fd = ::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol);
  if (fd < 0) return errno;
  const int one = 1;
  const int zero = 0;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (ai.ai_family == AF_INET6) {
    (void)::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, dual_stack ? &zero : &one, sizeof(one));
  }
  sockaddr_storage addr{};
  std::memcpy(&addr, ai.ai_addr, ai.ai_addrlen);
  if (port_ != 0) {  // port 0: every address gets the port the first one got
    if (ai.ai_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = htons(port_);
    if (ai.ai_family == AF_INET) reinterpret_cast<sockaddr_in*>(&addr)->sin_port = htons(port_);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), ai.ai_addrlen) != 0 || ::listen(fd, kListenBacklog) != 0) {
    const int err = errno;
    ::close(fd);
    return err;
  }
  listen_fds_.push_back(fd);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (port_ == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  return 0;
}

absl::Status TcpListener::BindHost(const std::string& host, const std::string& port, bool dual_stack, bool* busy) {
  addrinfo hints{};
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return ListenError(options_.listen, ::gai_strerror(rc));
  }
  int failed = 0;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int err = BindOne(*ai, dual_stack);
    if (err == 0) continue;
    failed = err;
    if (err == EADDRINUSE) break;
  }
  ::freeaddrinfo(found);
  *busy = failed == EADDRINUSE;
  // "localhost" on a host without IPv6: its IPv4 address is enough; a busy
  // port is an error whatever else bound (gRPC's listener as configured).
  if (*busy || listen_fds_.empty()) return ListenError(options_.listen, std::strerror(failed));
  return absl::OkStatus();
}

absl::Status TcpListener::Bind() {
  HostPort hp;
  if (absl::Status s = SplitListen(options_.listen, &hp); !s.ok()) return s;
  const bool wildcard = hp.host.empty();
  // The wildcard: one IPv6 socket that takes IPv4 too, or IPv4 alone on a
  // host without IPv6 (what gRPC does for "[::]" and "0.0.0.0").
  const std::vector<std::string> hosts =
      wildcard ? std::vector<std::string>{"::", "0.0.0.0"} : std::vector<std::string>{hp.host};
  absl::Status bound = ListenError(options_.listen, "no address");
  for (const std::string& host : hosts) {
    bool busy = false;
    bound = BindHost(host, hp.port, wildcard, &busy);
    if (bound.ok() || busy) break;
  }
  if (bound.ok()) {
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) bound = ListenError(options_.listen, absl::StrCat("eventfd: ", std::strerror(errno)));
  }
  if (!bound.ok()) {
    Stop();
    return bound;
  }
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return absl::OkStatus();
}

void TcpListener::Serve(grpc::experimental::ExternalConnectionAcceptor* acceptor) {
  thread_ = std::thread([this, acceptor] { AcceptLoop(acceptor); });
}

void TcpListener::AcceptLoop(grpc::experimental::ExternalConnectionAcceptor* acceptor) {
  util::NameThisThread("roced-tcp");
  std::vector<pollfd> fds;
  for (const int fd : listen_fds_) fds.push_back({fd, POLLIN, 0});
  fds.push_back({wake_fd_, POLLIN, 0});
  while (true) {
    for (pollfd& p : fds) p.revents = 0;
    const int n = ::poll(fds.data(), fds.size(), healthy_ ? -1 : kRecheckMs);
    if (n < 0 && errno != EINTR) {
      LOG_ERROR << "gRPC TCP listener: poll: " << std::strerror(errno);
      return;
    }
    if (fds.back().revents != 0) return;
    if (n == 0 && CanAcceptAgain()) Report(true, "");
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (fds[i].revents != 0) AcceptOne(fds[i].fd, acceptor);
    }
  }
}

void TcpListener::AcceptOne(int listen_fd, grpc::experimental::ExternalConnectionAcceptor* acceptor) {
  sockaddr_storage peer{};
  socklen_t peer_len = sizeof(peer);
  const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == EAGAIN || err == EINTR || err == ECONNABORTED) return;
    Report(false, absl::StrCat("cannot accept TCP connections: ", std::strerror(err), " (", Live(),
                               " connections open, open-file limit ", util::SoftFdLimit(), "); retrying every ",
                               kRetryMs, " ms"));
    if (IsResourceShortage(err)) ShedOne(listen_fd);
    pollfd wake{wake_fd_, POLLIN, 0};
    (void)::poll(&wake, 1, kRetryMs);
    return;
  }
  if (held_.size() >= static_cast<size_t>(cap_) && Live() >= static_cast<size_t>(cap_)) {
    ::close(fd);
    Report(false, absl::StrCat("at the connection cap: ", cap_, " TCP connections open; new ones are closed"));
    return;
  }
  std::string host = HostOf(peer);
  if (FromHost(host) >= static_cast<size_t>(per_peer_cap_)) {
    ::close(fd);
    ++refused_per_peer_;
    const absl::Time now = absl::Now();
    if (now - last_per_peer_log_ >= kPerPeerLogEvery) {
      LOG_WARNING << "gRPC TCP listener: " << host << " holds " << per_peer_cap_ << " connections, the most one "
                  << "address may; " << refused_per_peer_ << " connection(s) past that closed since the last report";
      refused_per_peer_ = 0;
      last_per_peer_log_ = now;
    }
    return;
  }
  held_.push_back({fd, InodeOf(fd), std::move(host)});
  grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
  p.listener_fd = listen_fd;
  p.fd = fd;
  acceptor->HandleNewConnection(&p);
  Report(true, "");
}

void TcpListener::ShedOne(int listen_fd) {
  if (spare_fd_ < 0) return;
  ::close(spare_fd_);
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) ::close(fd);
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

size_t TcpListener::FromHost(const std::string& host) {
  auto from = [&] {
    return static_cast<size_t>(std::count_if(held_.begin(), held_.end(), [&](const Held& h) { return h.host == host; }));
  };
  if (from() < static_cast<size_t>(per_peer_cap_)) return from();
  Live();
  return from();
}

size_t TcpListener::Live() {
  held_.erase(std::remove_if(held_.begin(), held_.end(),
                             [](const Held& h) { return h.inode == 0 || InodeOf(h.fd) != h.inode; }),
              held_.end());
  return held_.size();
}

bool TcpListener::CanAcceptAgain() {
  if (Live() >= static_cast<size_t>(cap_)) return false;
  if (spare_fd_ < 0) spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (spare_fd_ < 0) return false;
  const int probe = ::dup(spare_fd_);
  if (probe < 0) return false;
  ::close(probe);
  return true;
}

void TcpListener::Report(bool ok, const std::string& why) {
  if (ok == healthy_) return;
  healthy_ = ok;
  if (ok) {
    LOG_INFO << "gRPC TCP listener: accepting again";
  } else {
    LOG_WARNING << "gRPC TCP listener: " << why;
  }
  if (options_.on_health) options_.on_health(ok, why);
}

void TcpListener::Stop() {
  if (wake_fd_ >= 0 && thread_.joinable()) {
    const uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof(one)) < 0) {
      LOG_WARNING << "gRPC TCP listener: wake: " << std::strerror(errno);
    }
  }
  if (thread_.joinable()) thread_.join();
  for (const int fd : listen_fds_) ::close(fd);
  listen_fds_.clear();
  for (int* fd : {&wake_fd_, &spare_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

}  // namespace roced::agent
