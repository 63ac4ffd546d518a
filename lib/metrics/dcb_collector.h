// Prometheus collector for what DCB netlink reports per netdev: the PFC
// enable bit of each priority and the driver's per-priority PFC request and
// indication counts (IEEE 802.1Qaz ieee_pfc.requests / .indications: PFC
// frames sent and received). Read with one RTM_GETDCB per netdev at scrape
// time.
//
// | metric                              | type    | labels            | source                   |
// |-------------------------------------|---------|-------------------|--------------------------|
// | roced_dcb_pfc_enabled               | gauge   | netdev, priority  | ieee_pfc.pfc_en bit N    |
// | roced_dcb_pfc_requests_total        | counter | netdev, priority  | ieee_pfc.requests[N]     |
// | roced_dcb_pfc_indications_total     | counter | netdev, priority  | ieee_pfc.indications[N]  |
// | roced_dcb_dcbx_host_mode            | gauge   | netdev            | getdcbx DCB_CAP_DCBX_HOST|
// | roced_dcb_priority_traffic_class    | gauge   | netdev, priority, tc | ieee_ets.prio_tc (1)  |
//
// roced_dcb_dcbx_host_mode is 1 when the host runs DCBX on the port and 0
// when the NIC's firmware (mlx5's non-host mode) or an LLDP agent does; in
// that mode the firmware replaces what the host writes with what a willing
// port hears from the switch. No series when the driver reports no mode.
//
// A netdev without DCB (no getpfc) has no series. Drivers that implement
// getpfc but do not fill the counts report 0 for them (the kernel zeroes
// the structure before asking the driver); the ethtool families in
// counter_collector.h are the primary pause statistics.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hal/dcb_netlink.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace roced::metrics {

// One netdev's DCB PFC reading.
struct DcbPfcReading {
  std::string netdev;
  hal::DcbPfc pfc;
  std::optional<uint8_t> dcbx;  // getdcbx's mode bits, where reported
  std::optional<std::array<uint8_t, 8>> prio_tc;  // ETS priority -> traffic class, where reported
};

class DcbCollector : public prometheus::Collectable {
 public:
  using NetdevsFn = std::function<std::vector<std::string>()>;
  // Reads netdevs (thread-safe function) with `dcb` at every scrape.
  DcbCollector(const hal::DcbNetlink* dcb, NetdevsFn netdevs) : dcb_(dcb), netdevs_(std::move(netdevs)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

  // The families for one reading (exposed for tests); empty when no netdev
  // has DCB PFC.
  static std::vector<prometheus::MetricFamily> Families(const std::vector<DcbPfcReading>& readings);

 private:
  const hal::DcbNetlink* dcb_;
  NetdevsFn netdevs_;
};

}  // namespace roced::metrics
