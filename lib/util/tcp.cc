#include "util/tcp.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace roced::util {
namespace {

int RemainingMs(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
}

// Frees getaddrinfo's list when it goes out of scope.
struct AddrInfoList {
  addrinfo* head = nullptr;
  ~AddrInfoList() {
    if (head != nullptr) freeaddrinfo(head);
  }
};

}  // namespace

UniqueFd::UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) close(fd_);
}

absl::Status AwaitFd(int fd, short events, absl::Time deadline, const std::string& what) {
  while (true) {
    pollfd p{fd, events, 0};
    const int ms = RemainingMs(deadline);
    if (ms == 0) return absl::DeadlineExceededError(absl::StrCat(what, ": no answer within the timeout"));
    const int rc = poll(&p, 1, ms);
    if (rc > 0) return absl::OkStatus();
    if (rc < 0 && errno != EINTR) return absl::UnavailableError(absl::StrCat(what, ": poll: ", strerror(errno)));
  }
}

absl::StatusOr<UniqueFd> ConnectTcp(const std::string& host, uint16_t port, absl::Time deadline) {
  const std::string where = absl::StrCat(host, ":", port);
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  AddrInfoList list;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list.head); rc != 0) {
    return absl::UnavailableError(absl::StrCat(where, ": DNS: ", gai_strerror(rc)));
  }
  std::string last = "no address";
  for (addrinfo* a = list.head; a != nullptr; a = a->ai_next) {
    UniqueFd fd(socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (fd.get() < 0) continue;
    if (connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last = strerror(errno);
      continue;
    }
    if (absl::Status s = AwaitFd(fd.get(), POLLOUT, deadline, where); !s.ok()) return s;
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      last = strerror(err);
      continue;
    }
    return fd;
  }
  return absl::UnavailableError(absl::StrCat(where, ": cannot connect: ", last));
}

}  // namespace roced::util
