#include "hal/ethtool_info.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "util/fs.h"

namespace roced::hal {
namespace {

// A driver with more private flags than this is not one roced knows (ice
// has 6; the ethtool ABI allows 32, one bit each in ETHTOOL_GPFLAGS).
constexpr uint32_t kMaxPrivateFlags = 32;

absl::Status Ioctl(const std::string& netdev, void* data, const char* what) {
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

// A fixed-size ethtool string, cut at its first NUL.
std::string FromFixed(const char* s, size_t size) { return std::string(s, ::strnlen(s, size)); }

}  // namespace

absl::StatusOr<DriverInfo> EthtoolInfo::Driver(const std::string& netdev) const {
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  if (absl::Status s = Ioctl(netdev, &info, "ETHTOOL_GDRVINFO"); !s.ok()) return s;
  return DriverInfo{FromFixed(info.driver, sizeof(info.driver)), FromFixed(info.version, sizeof(info.version)),
                    FromFixed(info.fw_version, sizeof(info.fw_version)),
                    FromFixed(info.bus_info, sizeof(info.bus_info))};
}

absl::StatusOr<std::map<std::string, bool>> EthtoolInfo::PrivateFlags(const std::string& netdev) const {
  // How many: ETHTOOL_GSSET_INFO for ETH_SS_PRIV_FLAGS.
  // The reply: the header, then one u32 per set bit of sset_mask.
  alignas(ethtool_sset_info) unsigned char sset_buf[sizeof(ethtool_sset_info) + sizeof(uint32_t)] = {};
  auto* sset = reinterpret_cast<ethtool_sset_info*>(sset_buf);
  sset->cmd = ETHTOOL_GSSET_INFO;
  sset->sset_mask = 1ULL << ETH_SS_PRIV_FLAGS;
  if (absl::Status s = Ioctl(netdev, sset, "ETHTOOL_GSSET_INFO priv-flags"); !s.ok()) return s;
  std::map<std::string, bool> out;
  uint32_t n = 0;
  std::memcpy(&n, sset_buf + sizeof(ethtool_sset_info), sizeof(n));
  if (!(sset->sset_mask & (1ULL << ETH_SS_PRIV_FLAGS)) || n == 0) return out;
  if (n > kMaxPrivateFlags) {
    return absl::OutOfRangeError(absl::StrCat(netdev, ": ", n, " private flags (at most 32 exist)"));
  }
  std::vector<char> buf(sizeof(ethtool_gstrings) + static_cast<size_t>(n) * ETH_GSTRING_LEN);
  auto* strings = reinterpret_cast<ethtool_gstrings*>(buf.data());
  strings->cmd = ETHTOOL_GSTRINGS;
  strings->string_set = ETH_SS_PRIV_FLAGS;
  strings->len = n;
  if (absl::Status s = Ioctl(netdev, strings, "ETHTOOL_GSTRINGS priv-flags"); !s.ok()) return s;
  ethtool_value flags{};
  flags.cmd = ETHTOOL_GPFLAGS;
  if (absl::Status s = Ioctl(netdev, &flags, "ETHTOOL_GPFLAGS"); !s.ok()) return s;
  const char* names = buf.data() + sizeof(ethtool_gstrings);
  for (uint32_t i = 0; i < n && i < strings->len; ++i) {
    out[FromFixed(names + static_cast<size_t>(i) * ETH_GSTRING_LEN, ETH_GSTRING_LEN)] = (flags.data >> i) & 1;
  }
  return out;
}

}  // namespace roced::hal
