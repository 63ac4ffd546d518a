// Receiving LLDP frames on a netdev: an AF_PACKET socket bound to the
// netdev for EtherType 0x88CC, with the nearest-bridge group address
// (01:80:c2:00:00:0e) joined so a NIC that filters multicast passes the
// switch's frames up. Receive only: nothing here sends.
//
// Bounds: the kernel keeps at most kLldpReceiveBuffer bytes of unread
// frames per socket (a flood is dropped there, not queued in the agent),
// and a frame longer than kMaxLldpFrame is read truncated and refused.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace roced::hal {

inline constexpr int kLldpReceiveBuffer = 64 * 1024;
// A jumbo frame's worth: no LLDPDU is longer (802.1AB caps it at the
// link's maximum frame size).
inline constexpr size_t kMaxLldpFrame = 9216;

class LldpSocket {
 public:
  // NOT_FOUND when the netdev does not exist, PERMISSION_DENIED without
  // CAP_NET_RAW, else the errno of what failed.
  static absl::StatusOr<std::unique_ptr<LldpSocket>> Open(const std::string& netdev);
  ~LldpSocket();
  LldpSocket(const LldpSocket&) = delete;
  LldpSocket& operator=(const LldpSocket&) = delete;

  const std::string& netdev() const { return netdev_; }
  int ifindex() const { return ifindex_; }
  int fd() const { return fd_; }

  // One pending frame, without waiting; nullopt when none is pending.
  // A frame over kMaxLldpFrame is INVALID_ARGUMENT (and consumed).
  absl::StatusOr<std::optional<std::vector<uint8_t>>> Read();

 private:
  LldpSocket(std::string netdev, int ifindex, int fd) : netdev_(std::move(netdev)), ifindex_(ifindex), fd_(fd) {}
  const std::string netdev_;
  const int ifindex_;
  const int fd_;
};

// Waits up to `timeout` until one of `sockets` has a frame (or `wake_fd`,
// when >= 0, is readable). Returns the indexes of the readable sockets.
std::vector<size_t> WaitForLldp(const std::vector<LldpSocket*>& sockets, int wake_fd, absl::Duration timeout);

}  // namespace roced::hal
