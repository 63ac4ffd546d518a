// Prometheus collector for what the switches say over LLDP, per RoCE netdev
// (agent/runtimes/lldp_runtime.h hears it). Bounded: at most 4 neighbours per netdev
// and 64 application entries per neighbour (hal/lldp.h).
//
// | metric                                   | type  | labels                                   |
// |------------------------------------------|-------|------------------------------------------|
// | roced_lldp_neighbor_info                 | gauge | netdev, chassis_id, port_id, system_name |
// | roced_lldp_neighbor_last_heard_timestamp_seconds | gauge | netdev, chassis_id, port_id      |
// | roced_switch_pfc_enabled                 | gauge | netdev, priority                         |
// | roced_switch_app_priority                | gauge | netdev, selector, protocol               |
// | roced_switch_max_frame_size_bytes        | gauge | netdev                                   |
//
// roced_switch_pfc_enabled is 1 or 0 per priority when the switch advertised
// PFC (IEEE or CEE); roced_switch_app_priority's value is the priority the
// switch maps the protocol to (selector "dscp", "ethertype", "tcp_port",
// "udp_port", "tcp_udp_port"). Without a neighbour a netdev has no series.
#pragma once

#include <functional>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "roced/v1/state.pb.h"

namespace roced::metrics {

class LldpCollector : public prometheus::Collectable {
 public:
  using NeighborsFn = std::function<std::vector<roced::v1::LldpNeighbor>()>;
  explicit LldpCollector(NeighborsFn neighbors) : neighbors_(std::move(neighbors)) {}

  std::vector<prometheus::MetricFamily> Collect() const override { return Families(neighbors_()); }

  static std::vector<prometheus::MetricFamily> Families(const std::vector<roced::v1::LldpNeighbor>& neighbors);

 private:
  NeighborsFn neighbors_;
};

// "dscp" etc. for an IEEE application selector; "selector_N" for others.
std::string AppSelectorName(uint32_t selector);

}  // namespace roced::metrics
