#include "hal/lldp_socket.h"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "hal/lldp.h"

namespace roced::hal {
namespace {

absl::Status Errno(int err, const std::string& what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(err));
  if (err == EPERM || err == EACCES) return absl::PermissionDeniedError(message + " (needs CAP_NET_RAW)");
  if (err == ENODEV || err == ENXIO) return absl::NotFoundError(message);
  return absl::InternalError(message);
}

absl::Status Configure(int fd, int ifindex, const std::string& netdev) {
  sockaddr_ll addr{};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(kEthPLldp);
  addr.sll_ifindex = ifindex;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Errno(errno, absl::StrCat("bind an LLDP socket to ", netdev));
  }
  packet_mreq mreq{};
  mreq.mr_ifindex = ifindex;
  mreq.mr_type = PACKET_MR_MULTICAST;
  mreq.mr_alen = kLldpNearestBridge.size();
  std::memcpy(mreq.mr_address, kLldpNearestBridge.data(), kLldpNearestBridge.size());
  if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq, sizeof(mreq)) != 0) {
    return Errno(errno, absl::StrCat("join 01:80:c2:00:00:0e on ", netdev));
  }
  const int rcvbuf = kLldpReceiveBuffer;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) != 0) {
    return Errno(errno, absl::StrCat("set the LLDP receive buffer on ", netdev));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LldpSocket>> LldpSocket::Open(const std::string& netdev) {
  const unsigned ifindex = if_nametoindex(netdev.c_str());
  if (ifindex == 0) return absl::NotFoundError(absl::StrCat("no netdev ", netdev));
  // Protocol 0 until bind: no frame of another netdev is queued meanwhile.
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno(errno, "open an AF_PACKET socket");
  if (absl::Status s = Configure(fd, static_cast<int>(ifindex), netdev); !s.ok()) {
    close(fd);
    return s;
  }
  return std::unique_ptr<LldpSocket>(new LldpSocket(netdev, static_cast<int>(ifindex), fd));
}

LldpSocket::~LldpSocket() { close(fd_); }

absl::StatusOr<std::optional<std::vector<uint8_t>>> LldpSocket::Read() {
  std::vector<uint8_t> frame(kMaxLldpFrame);
  const ssize_t n = recv(fd_, frame.data(), frame.size(), MSG_TRUNC);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return std::nullopt;
    return Errno(errno, absl::StrCat("read LLDP on ", netdev_));
  }
  if (static_cast<size_t>(n) > frame.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a ", n, "-byte frame on ", netdev_, " is over the ",
                                                   kMaxLldpFrame, "-byte LLDP bound: dropped"));
  }
  frame.resize(static_cast<size_t>(n));
  return frame;
}

std::vector<size_t> WaitForLldp(const std::vector<LldpSocket*>& sockets, int wake_fd, absl::Duration timeout) {
  std::vector<pollfd> fds;
  for (const LldpSocket* s : sockets) fds.push_back({s->fd(), POLLIN, 0});
  if (wake_fd >= 0) fds.push_back({wake_fd, POLLIN, 0});
  const int ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
  std::vector<size_t> ready;
  if (poll(fds.data(), fds.size(), ms) <= 0) return ready;
  for (size_t i = 0; i < sockets.size(); ++i) {
    if (fds[i].revents & (POLLIN | POLLERR)) ready.push_back(i);
  }
  return ready;
}

}  // namespace roced::hal
