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
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/thread_name.h"

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
  for (int group : {RTNLGRP_DCB, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR}) {
    if (::setsockopt(fd_, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) != 0) {
      LOG_WARNING << "netlink: cannot join rtnetlink group " << group << ": " << strerror(errno);
    }
  }
  // Kernel uevents (group 1); only infiniband ones are acted on.
  uevent_fd_ = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
  struct sockaddr_nl uaddr {};
  uaddr.nl_family = AF_NETLINK;
  uaddr.nl_groups = 1;
  if (uevent_fd_ < 0 ||
      ::bind(uevent_fd_, reinterpret_cast<struct sockaddr*>(&uaddr), sizeof(uaddr)) != 0) {
    LOG_WARNING << "netlink: no kernel uevents (" << strerror(errno)
                << "); RDMA devices that appear wait for the periodic discovery";
    if (uevent_fd_ >= 0) ::close(uevent_fd_);
    uevent_fd_ = -1;
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    return util::ErrnoToStatus(err, "eventfd");
  }
  thread_ = std::thread([this] {
    util::NameThisThread("roced-netlink");
    Run();
  });
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
  if (uevent_fd_ >= 0) ::close(uevent_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  fd_ = uevent_fd_ = wake_fd_ = -1;
}

LinkEvents ScanLinkEvents(const void* buf, size_t len) {
  LinkEvents out;
  ssize_t remaining = static_cast<ssize_t>(std::min<size_t>(len, SSIZE_MAX));
  for (auto* nh = static_cast<const nlmsghdr*>(buf); NLMSG_OK(nh, remaining); nh = NLMSG_NEXT(nh, remaining)) {
    ++out.messages;
    const char* why;
    if (nh->nlmsg_type == RTM_SETDCB || nh->nlmsg_type == RTM_GETDCB) {
      why = "dcb change";
    } else if (nh->nlmsg_type == RTM_NEWADDR || nh->nlmsg_type == RTM_DELADDR) {
      why = "address change";
    } else if (nh->nlmsg_type == RTM_NEWLINK) {
      why = "link change (newlink)";
    } else {
      why = "link change (dellink)";
    }
    if (std::find(out.reasons.begin(), out.reasons.end(), why) == out.reasons.end()) {
      out.reasons.emplace_back(why);
    }
  }
  return out;
}

std::optional<std::string> ScanUevent(const char* buf, size_t len) {
  absl::string_view all(buf, len);
  const size_t first_end = all.find('\0');
  absl::string_view head = all.substr(0, first_end);
  const size_t at = head.find('@');
  if (at == absl::string_view::npos || at == 0) return std::nullopt;
  absl::string_view action = head.substr(0, at);
  absl::string_view subsystem, devname;
  if (first_end != absl::string_view::npos) {
    for (absl::string_view kv : absl::StrSplit(all.substr(first_end + 1), '\0')) {
      if (absl::ConsumePrefix(&kv, "SUBSYSTEM=")) subsystem = kv;
      else if (absl::ConsumePrefix(&kv, "DEVNAME=")) devname = kv;
    }
  }
  if (subsystem != "infiniband" && subsystem != "infiniband_verbs") return std::nullopt;
  absl::string_view path = head.substr(at + 1);
  absl::string_view name = devname.empty() ? path.substr(path.rfind('/') + 1) : devname;
  return absl::StrCat("RDMA device ", action, " (", name, ")");
}

namespace {
// Adds `why` to the window's reasons unless it is there already. Bounded:
// the netlink kinds are four, and RDMA device uevents (one reason per
// device) stop being named after kMaxReasons; the call still happens.
constexpr size_t kMaxReasons = 8;
void AddReason(std::vector<std::string>* reasons, std::string why) {
  if (reasons->size() >= kMaxReasons) return;
  if (std::find(reasons->begin(), reasons->end(), why) != reasons->end()) return;
  reasons->push_back(std::move(why));
}
}  // namespace

void LinkMonitor::Run() {
  char buf[16384];
  int pending_ms = -1;  // -1: nothing pending
  std::vector<std::string> reasons;
  while (true) {
    struct pollfd fds[3] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}, {uevent_fd_, POLLIN, 0}};
    int rc = ::poll(fds, uevent_fd_ >= 0 ? 3 : 2, pending_ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      LOG_ERROR << "netlink monitor: poll: " << strerror(errno);
      return;
    }
    if (fds[1].revents & POLLIN) return;
    if (rc == 0) {  // debounce window closed
      callback_(absl::StrJoin(reasons, ", "));
      pending_ms = -1;
      reasons.clear();
      continue;
    }
    if (fds[0].revents & POLLIN) {
      while (true) {
        ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
        if (n < 0) {
          // ENOBUFS: we lost messages; a refresh covers whatever they said.
          if (errno == ENOBUFS) {
            AddReason(&reasons, "netlink overrun");
            continue;
          }
          break;
        }
        LinkEvents seen = ScanLinkEvents(buf, static_cast<size_t>(n));
        events_.fetch_add(seen.messages);
        for (std::string& why : seen.reasons) AddReason(&reasons, std::move(why));
      }
      pending_ms = static_cast<int>(absl::ToInt64Milliseconds(debounce_));
    }
    if (uevent_fd_ >= 0 && (fds[2].revents & POLLIN)) {
      bool rdma = false;
      while (true) {
        ssize_t n = ::recv(uevent_fd_, buf, sizeof(buf), 0);
        if (n < 0) {
          if (errno == ENOBUFS) continue;  // lost some: the ones we see still count
          break;
        }
        std::optional<std::string> why = ScanUevent(buf, static_cast<size_t>(n));
        if (!why.has_value()) continue;
        events_.fetch_add(1);
        rdma = true;
        AddReason(&reasons, std::move(*why));
      }
      if (rdma) pending_ms = static_cast<int>(absl::ToInt64Milliseconds(debounce_));
    }
  }
}

}  // namespace roced::hal
