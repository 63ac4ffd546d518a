#include "hal/ethtool_info.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "util/fs.h"

namespace roced::hal {
absl::Status EthtoolIoctl(const std::string& netdev, void* data, const char* what) {
  if (netdev.empty() || netdev.size() >= IFNAMSIZ) {
    return absl::InvalidArgumentError(absl::StrCat("netdev name '", netdev, "' is not 1-15 bytes"));
  }
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return util::ErrnoToStatus(errno, "socket(AF_INET, SOCK_DGRAM) for ethtool");
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
  ifr.ifr_data = static_cast<char*>(data);
  const int rc = ::ioctl(fd, SIOCETHTOOL, &ifr);
  const int err = errno;
  ::close(fd);
  if (rc == 0) return absl::OkStatus();
  if (err == EOPNOTSUPP) return absl::UnimplementedError(absl::StrCat(netdev, ": ", what, ": not supported"));
  return util::ErrnoToStatus(err, absl::StrCat(netdev, ": ", what));
}

namespace {

// A fixed-size ethtool string, cut at its first NUL.
std::string FromFixed(const char* s, size_t size) { return DriverInfoText(std::string_view(s, ::strnlen(s, size))); }

}  // namespace

std::string DriverInfoText(std::string_view s) {
  std::string out(s.substr(0, 32));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

absl::StatusOr<DriverInfo> EthtoolInfo::Driver(const std::string& netdev) const {
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  if (absl::Status s = EthtoolIoctl(netdev, &info, "ETHTOOL_GDRVINFO"); !s.ok()) return s;
  return DriverInfo{FromFixed(info.driver, sizeof(info.driver)), FromFixed(info.version, sizeof(info.version)),
                    FromFixed(info.fw_version, sizeof(info.fw_version)),
                    FromFixed(info.bus_info, sizeof(info.bus_info))};
}

}  // namespace roced::hal
