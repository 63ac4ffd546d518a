#include "hal/link_monitor.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "util/fs.h"
#include "util/log.h"

namespace roced::hal {

LinkMonitor::LinkMonitor(Callback callback, absl::Duration debounce)
    : callback_(std::move(callback)), debounce_(debounce) {}

LinkMonitor::~LinkMonitor() { Stop(); }

absl::Status LinkMonitor::Start() {
  // A plain netlink socket is enough here: we only need to know that a
  // message arrived on the groups, not to parse it (discovery re-reads sysfs).
  fd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (fd_ < 0) return util::ErrnoToStatus(errno, "netlink socket");
  struct sockaddr_nl addr {};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = RTMGRP_LINK;
  if (::bind(fd_, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    return util::ErrnoToStatus(err, "bind netlink RTMGRP_LINK");
  }
  int group = RTNLGRP_DCB;
  if (::setsockopt(fd_, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) != 0) {
    LOG_WARNING << "netlink: cannot join RTNLGRP_DCB: " << strerror(errno);
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    return util::ErrnoToStatus(err, "eventfd");
  }
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void LinkMonitor::Stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    ssize_t n = ::write(wake_fd_, &one, sizeof(one));
    (void)n;
    thread_.join();
  }
  if (fd_ >= 0) ::close(fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  fd_ = wake_fd_ = -1;
}

LinkEvents ScanLinkEvents(const void* buf, size_t len) {
  LinkEvents out;
  ssize_t remaining = static_cast<ssize_t>(std::min<size_t>(len, SSIZE_MAX));
  for (auto* nh = static_cast<const nlmsghdr*>(buf); NLMSG_OK(nh, remaining); nh = NLMSG_NEXT(nh, remaining)) {
    ++out.messages;
    if (!out.first_reason.empty()) continue;
    out.first_reason = nh->nlmsg_type == RTM_SETDCB || nh->nlmsg_type == RTM_GETDCB
                           ? "dcb change"
                           : absl::StrCat("link change (", nh->nlmsg_type == RTM_NEWLINK ? "new" : "del", "link)");
  }
  return out;
}

void LinkMonitor::Run() {
  char buf[16384];
  int pending_ms = -1;  // -1: nothing pending
  std::string reason;
  while (true) {
    struct pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int rc = ::poll(fds, 2, pending_ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      LOG_ERROR << "netlink monitor: poll: " << strerror(errno);
      return;
    }
    if (fds[1].revents & POLLIN) return;
    if (rc == 0) {  // debounce window closed
      callback_(reason);
      pending_ms = -1;
      reason.clear();
      continue;
    }
    if (fds[0].revents & POLLIN) {
      while (true) {
        ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
        if (n < 0) {
          // ENOBUFS: we lost messages; a refresh covers whatever they said.
          if (errno == ENOBUFS) {
            reason = "netlink overrun";
            continue;
          }
          break;
        }
        LinkEvents seen = ScanLinkEvents(buf, static_cast<size_t>(n));
        events_.fetch_add(seen.messages);
        if (reason.empty()) reason = seen.first_reason;
      }
      pending_ms = static_cast<int>(absl::ToInt64Milliseconds(debounce_));
    }
  }
}

}  // namespace roced::hal
