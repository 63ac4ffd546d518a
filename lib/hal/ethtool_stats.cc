#include "hal/ethtool_stats.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "util/fs.h"

namespace roced::hal {
namespace {

// The kernel writes as many entries as the driver has *now*, whatever
// count the caller passed (ethtool_get_stats/ethtool_get_strings ignore the
// request's length), so a count that grows between GSSET_INFO and GSTATS
// would overrun a buffer sized exactly. Leave room for that; a read whose
// count changed is then retried.
size_t Capacity(uint32_t count) { return static_cast<size_t>(count) * 2 + 64; }

}  // namespace

EthtoolStats::~EthtoolStats() {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ >= 0) ::close(fd_);
}

absl::Status EthtoolStats::Ioctl(const std::string& netdev, void* data, const char* what) {
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
  ifr.ifr_data = static_cast<char*>(data);
  if (::ioctl(fd_, SIOCETHTOOL, &ifr) != 0) {
    return util::ErrnoToStatus(errno, absl::StrCat(what, " on ", netdev));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> EthtoolStats::StatsCount(const std::string& netdev) {
  // struct ethtool_sset_info ends in a flexible u32 array: one entry per
  // bit set in sset_mask, and only ETH_SS_STATS is asked for.
  alignas(ethtool_sset_info) unsigned char buf[sizeof(ethtool_sset_info) + sizeof(uint32_t)] = {};
  auto* info = reinterpret_cast<ethtool_sset_info*>(buf);
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ULL << ETH_SS_STATS;
  absl::Status s = Ioctl(netdev, info, "ETHTOOL_GSSET_INFO");
  if (!s.ok()) return s;
  if ((info->sset_mask & (1ULL << ETH_SS_STATS)) == 0) return 0u;
  uint32_t count = 0;
  std::memcpy(&count, buf + sizeof(ethtool_sset_info), sizeof(count));
  return count;
}

absl::StatusOr<std::vector<std::string>> EthtoolStats::FetchNames(const std::string& netdev,
                                                                  uint32_t count) {
  std::vector<uint64_t> storage(
      (sizeof(ethtool_gstrings) + Capacity(count) * ETH_GSTRING_LEN + sizeof(uint64_t) - 1) /
      sizeof(uint64_t));
  auto* strings = reinterpret_cast<ethtool_gstrings*>(storage.data());
  strings->cmd = ETHTOOL_GSTRINGS;
  strings->string_set = ETH_SS_STATS;
  strings->len = count;
  absl::Status s = Ioctl(netdev, strings, "ETHTOOL_GSTRINGS");
  if (!s.ok()) return s;
  if (strings->len != count) {
    return absl::UnavailableError(absl::StrCat("ETHTOOL_GSTRINGS on ", netdev, ": ",
                                               strings->len, " names for ", count,
                                               " statistics (changing?)"));
  }
  const char* data = reinterpret_cast<const char*>(storage.data()) + sizeof(ethtool_gstrings);
  return DecodeStatNames(data, storage.size() * sizeof(uint64_t) - sizeof(ethtool_gstrings), count);
}

std::vector<std::string> DecodeStatNames(const char* data, size_t size, uint32_t count) {
  const size_t n = std::min<size_t>(count, size / ETH_GSTRING_LEN);
  std::vector<std::string> names;
  names.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const char* name = data + i * ETH_GSTRING_LEN;
    names.emplace_back(name, strnlen(name, ETH_GSTRING_LEN));
  }
  return names;
}

absl::StatusOr<std::vector<EthtoolStat>> EthtoolStats::ReadStats(const std::string& netdev) {
  if (netdev.empty() || netdev.size() >= IFNAMSIZ) {
    return absl::InvalidArgumentError(absl::StrCat("'", netdev, "' is not a netdev name"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return util::ErrnoToStatus(errno, "socket(AF_INET, SOCK_DGRAM) for ethtool");
  }
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
  if (::ioctl(fd_, SIOCGIFINDEX, &ifr) != 0) {
    int err = errno;
    names_.erase(netdev);
    return util::ErrnoToStatus(err, absl::StrCat("netdev ", netdev));
  }
  const int ifindex = ifr.ifr_ifindex;

  // Two attempts: the statistics set may change between the calls (PFC
  // toggled on mlx5); the second attempt sees the new set.
  absl::Status last;
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<uint32_t> count = StatsCount(netdev);
    if (!count.ok()) return count.status();
    if (*count == 0) {
      names_.erase(netdev);
      return absl::UnimplementedError(
          absl::StrCat("netdev ", netdev, ": the driver keeps no ethtool statistics"));
    }
    auto cached = names_.find(netdev);
    if (cached == names_.end() || cached->second.ifindex != ifindex ||
        cached->second.names.size() != *count) {
      absl::StatusOr<std::vector<std::string>> names = FetchNames(netdev, *count);
      if (!names.ok()) {
        last = names.status();
        if (absl::IsUnavailable(last)) continue;
        return last;
      }
      cached = names_.insert_or_assign(netdev, Names{ifindex, *std::move(names)}).first;
    }
    std::vector<uint64_t> storage(sizeof(ethtool_stats) / sizeof(uint64_t) + Capacity(*count));
    auto* stats = reinterpret_cast<ethtool_stats*>(storage.data());
    stats->cmd = ETHTOOL_GSTATS;
    stats->n_stats = *count;
    absl::Status s = Ioctl(netdev, stats, "ETHTOOL_GSTATS");
    if (!s.ok()) return s;
    if (stats->n_stats != *count) {
      names_.erase(netdev);
      last = absl::UnavailableError(absl::StrCat("ETHTOOL_GSTATS on ", netdev, ": ",
                                                 stats->n_stats, " values for ", *count,
                                                 " names (statistics set changing)"));
      continue;
    }
    const uint64_t* values = storage.data() + sizeof(ethtool_stats) / sizeof(uint64_t);
    std::vector<EthtoolStat> out;
    out.reserve(*count);
    for (uint32_t i = 0; i < *count; ++i) out.push_back({cached->second.names[i], values[i]});
    return out;
  }
  return last;
}

std::optional<PfcStatName> ParsePfcStatName(absl::string_view name) {
  if (name == "rx_pause_ctrl_phy") return PfcStatName{PfcStatKind::kRxPausePhy, std::nullopt};
  if (name == "tx_pause_ctrl_phy") return PfcStatName{PfcStatKind::kTxPausePhy, std::nullopt};
  if (name == "rx_discards_phy") return PfcStatName{PfcStatKind::kRxDiscardsPhy, std::nullopt};
  if (name == "tx_pause_storm_warning_events") {
    return PfcStatName{PfcStatKind::kTxPauseStormWarning, std::nullopt};
  }
  if (name == "tx_pause_storm_error_events") {
    return PfcStatName{PfcStatKind::kTxPauseStormError, std::nullopt};
  }
  bool rx;
  if (absl::ConsumePrefix(&name, "rx_prio")) {
    rx = true;
  } else if (absl::ConsumePrefix(&name, "tx_prio")) {
    rx = false;
  } else {
    return std::nullopt;
  }
  // One digit, 0-7: 802.1Q has eight priorities.
  if (name.size() < 2 || name[0] < '0' || name[0] > '7' || name[1] != '_') return std::nullopt;
  const uint32_t priority = static_cast<uint32_t>(name[0] - '0');
  name.remove_prefix(2);
  std::optional<PfcStatKind> kind;
  if (name == "pause") {
    kind = rx ? PfcStatKind::kRxPause : PfcStatKind::kTxPause;
  } else if (name == "pause_duration") {
    kind = rx ? PfcStatKind::kRxPauseDuration : PfcStatKind::kTxPauseDuration;
  } else if (rx && name == "pause_transition") {
    kind = PfcStatKind::kRxPauseTransition;
  } else if (rx && name == "buf_discard") {
    kind = PfcStatKind::kRxBufferDiscard;
  } else if (rx && name == "cong_discard") {
    kind = PfcStatKind::kRxCongestionDiscard;
  } else if (rx && name == "marked") {
    kind = PfcStatKind::kRxEcnMarked;
  }
  if (!kind.has_value()) return std::nullopt;
  return PfcStatName{*kind, priority};
}

}  // namespace roced::hal
