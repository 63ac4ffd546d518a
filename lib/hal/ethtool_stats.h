// A netdev's driver statistics, as `ethtool -S` shows them, read with the
// SIOCETHTOOL ioctl (ETHTOOL_GSSET_INFO for the count, ETHTOOL_GSTRINGS for
// the names, ETHTOOL_GSTATS for the values) on an AF_INET datagram socket.
// The per-priority PFC counters the drivers keep (mlx5's rx_prio3_pause,
// bnxt_en's rx_pfc_ena_frames_pri3, ice's rx_priority_3_xoff.nic) exist only
// here: ethtool netlink's standard statistics groups carry global pause only.
//
// Names are fetched once per netdev and fetched again when the netdev's
// statistics count or ifindex changes (mlx5 adds and removes the per-priority
// pause counters when PFC is enabled or disabled on a priority), so a
// steady-state read is three ioctls.
//
// Needs no capability. The socket, and so the network namespace the netdevs
// are looked up in, is that of the thread that made the first Read().
// Thread-safe: concurrent reads are serialized.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace roced::hal {

struct EthtoolStat {
  std::string name;
  uint64_t value = 0;
};

// A source of per-netdev driver statistics; EthtoolStats is the real one.
// Tests of consumers substitute their own.
class NetdevStatsReader {
 public:
  virtual ~NetdevStatsReader() = default;
  // Every statistic of `netdev`, in the driver's order. NOT_FOUND: no such
  // netdev. UNIMPLEMENTED: the driver keeps no statistics (lo, dummy).
  virtual absl::StatusOr<std::vector<EthtoolStat>> ReadStats(const std::string& netdev) = 0;
};

class EthtoolStats : public NetdevStatsReader {
 public:
  EthtoolStats() = default;
  ~EthtoolStats() override;
  EthtoolStats(const EthtoolStats&) = delete;
  EthtoolStats& operator=(const EthtoolStats&) = delete;

  absl::StatusOr<std::vector<EthtoolStat>> ReadStats(const std::string& netdev) override;

 private:
  struct Names {
    int ifindex = 0;
    std::vector<std::string> names;
  };
  absl::StatusOr<uint32_t> StatsCount(const std::string& netdev);
  absl::StatusOr<std::vector<std::string>> FetchNames(const std::string& netdev, uint32_t count);
  absl::Status Ioctl(const std::string& netdev, void* data, const char* what);

  // std::mutex, not absl::Mutex: Debian's Abseil is not built with TSan,
  // so absl::Mutex's ordering is invisible to it (false races in TSan runs).
  std::mutex mu_;
  // Below: guarded by mu_, which the private helpers need held.
  int fd_ = -1;
  std::map<std::string, Names> names_;
};

// The PFC, pause and discard statistics of `ethtool -S`, whatever the
// driver calls them. Each kind has a name per driver (mlx5 / bnxt_en /
// ice; "-": the driver has none):
enum class PfcStatKind {
  kRxPause,              // rx_prio<N>_pause / rx_pfc_ena_frames_pri<N> / rx_priority_<N>_xoff.nic
  kTxPause,              // tx_prio<N>_pause / tx_pfc_ena_frames_pri<N> / tx_priority_<N>_xoff.nic
  kRxPauseDuration,      // rx_prio<N>_pause_duration / pfc_pri<N>_rx_duration_us / - (microseconds)
  kTxPauseDuration,      // tx_prio<N>_pause_duration / pfc_pri<N>_tx_duration_us / -
  kRxPauseTransition,    // rx_prio<N>_pause_transition / pfc_pri<N>_rx_transitions / rx_priority_<N>_xon.nic
  kRxBufferDiscard,      // rx_prio<N>_buf_discard / rx_discard_packets_cos<N> / -
  kRxCongestionDiscard,  // rx_prio<N>_cong_discard / - / -
  kRxEcnMarked,          // rx_prio<N>_marked / - / -
  kTxPackets,            // tx_prio<N>_packets / tx_packets_pri<N> / -: the queue's progress
  kRxPausePhy,           // rx_pause_ctrl_phy / rx_pause_frames / link_xoff_rx.nic (802.3x)
  kTxPausePhy,           // tx_pause_ctrl_phy / tx_pause_frames / link_xoff_tx.nic
  kRxDiscardsPhy,        // rx_discards_phy / rx_stat_discard / rx_dropped.nic
  kTxPauseStormWarning,  // tx_pause_storm_warning_events / - / -
  kTxPauseStormError,    // tx_pause_storm_error_events / - / -
};

struct PfcStatName {
  PfcStatKind kind;
  // 0-7 for the per-priority statistics, empty for the port-wide ones.
  // mlx5 fills the *_discard and *_marked ones per traffic class under a
  // "prio" name, and bnxt_en counts discards per CoS queue; with the
  // default 1:1 priority-to-TC map they coincide.
  std::optional<uint32_t> priority;
};

// The names in an ETHTOOL_GSTRINGS reply's data (`size` bytes after the
// header): `count` fixed-width entries of ETH_GSTRING_LEN bytes, each cut
// at its first NUL (a name filling its entry has none). Only as many
// entries as `size` holds whole are read.
std::vector<std::string> DecodeStatNames(const char* data, size_t size, uint32_t count);

// Parses a statistic name of mlx5, bnxt_en or ice; nullopt for every
// other statistic (including rx_prio8_pause and other out-of-range
// priorities).
std::optional<PfcStatName> ParsePfcStatName(absl::string_view name);

}  // namespace roced::hal
