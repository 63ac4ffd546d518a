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

namespace {

// One driver's name for a statistic: `prefix`, then for a per-priority one
// a single digit 0-7, then `suffix`. From mlx5's en_stats.c, bnxt_en's
// bnxt_ethtool.c and ice's ice_ethtool.c (Linux 6.1); docs/metrics.md
// lists them by driver.
struct StatPattern {
  absl::string_view prefix;
  absl::string_view suffix;
  bool per_priority;
  PfcStatKind kind;
};

constexpr StatPattern kStatPatterns[] = {
    // mlx5
    {"rx_pause_ctrl_phy", "", false, PfcStatKind::kRxPausePhy},
    {"tx_pause_ctrl_phy", "", false, PfcStatKind::kTxPausePhy},
    {"rx_discards_phy", "", false, PfcStatKind::kRxDiscardsPhy},
    {"tx_pause_storm_warning_events", "", false, PfcStatKind::kTxPauseStormWarning},
    {"tx_pause_storm_error_events", "", false, PfcStatKind::kTxPauseStormError},
    {"rx_prio", "_pause", true, PfcStatKind::kRxPause},
    {"tx_prio", "_pause", true, PfcStatKind::kTxPause},
    {"rx_prio", "_pause_duration", true, PfcStatKind::kRxPauseDuration},
    {"tx_prio", "_pause_duration", true, PfcStatKind::kTxPauseDuration},
    {"rx_prio", "_pause_transition", true, PfcStatKind::kRxPauseTransition},
    {"rx_prio", "_buf_discard", true, PfcStatKind::kRxBufferDiscard},
    {"rx_prio", "_cong_discard", true, PfcStatKind::kRxCongestionDiscard},
    {"rx_prio", "_marked", true, PfcStatKind::kRxEcnMarked},
    {"tx_prio", "_packets", true, PfcStatKind::kTxPackets},
    // bnxt_en
    {"rx_pause_frames", "", false, PfcStatKind::kRxPausePhy},
    {"tx_pause_frames", "", false, PfcStatKind::kTxPausePhy},
    {"rx_stat_discard", "", false, PfcStatKind::kRxDiscardsPhy},
    {"rx_pfc_ena_frames_pri", "", true, PfcStatKind::kRxPause},
    {"tx_pfc_ena_frames_pri", "", true, PfcStatKind::kTxPause},
    {"pfc_pri", "_rx_duration_us", true, PfcStatKind::kRxPauseDuration},
    {"pfc_pri", "_tx_duration_us", true, PfcStatKind::kTxPauseDuration},
    {"pfc_pri", "_rx_transitions", true, PfcStatKind::kRxPauseTransition},
    {"rx_discard_packets_cos", "", true, PfcStatKind::kRxBufferDiscard},
    {"tx_packets_pri", "", true, PfcStatKind::kTxPackets},
    // ice
    {"link_xoff_rx.nic", "", false, PfcStatKind::kRxPausePhy},
    {"link_xoff_tx.nic", "", false, PfcStatKind::kTxPausePhy},
    {"rx_dropped.nic", "", false, PfcStatKind::kRxDiscardsPhy},
    {"rx_priority_", "_xoff.nic", true, PfcStatKind::kRxPause},
    {"tx_priority_", "_xoff.nic", true, PfcStatKind::kTxPause},
    {"rx_priority_", "_xon.nic", true, PfcStatKind::kRxPauseTransition},
};

}  // namespace

std::optional<PfcStatName> ParsePfcStatName(absl::string_view name) {
  for (const StatPattern& p : kStatPatterns) {
    absl::string_view rest = name;
    if (!absl::ConsumePrefix(&rest, p.prefix) || !absl::ConsumeSuffix(&rest, p.suffix)) continue;
    if (!p.per_priority) {
      if (rest.empty()) return PfcStatName{p.kind, std::nullopt};
      continue;
    }
    // One digit, 0-7: 802.1Q has eight priorities (and bnxt_en eight queues).
    if (rest.size() != 1 || rest[0] < '0' || rest[0] > '7') continue;
    return PfcStatName{p.kind, static_cast<uint32_t>(rest[0] - '0')};
  }
  return std::nullopt;
}

}  // namespace roced::hal
