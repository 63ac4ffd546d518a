#include "metrics/node_collector.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"

namespace roced::metrics {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

const char* GidTypeLabel(roced::v1::GidType type) {
  switch (type) {
    case roced::v1::GID_TYPE_IB: return "ib";
    case roced::v1::GID_TYPE_ROCE_V1: return "roce_v1";
    case roced::v1::GID_TYPE_ROCE_V2: return "roce_v2";
    default: return "unknown";
  }
}

const char* PortStateLabel(roced::v1::PortState state) {
  switch (state) {
    case roced::v1::PORT_STATE_DOWN: return "down";
    case roced::v1::PORT_STATE_INIT: return "init";
    case roced::v1::PORT_STATE_ARMED: return "armed";
    case roced::v1::PORT_STATE_ACTIVE: return "active";
    case roced::v1::PORT_STATE_ACTIVE_DEFER: return "active_defer";
    default: return "unknown";
  }
}

namespace {

class Builder {
 public:
  MetricFamily& Family(const std::string& name, const std::string& help, MetricType type) {
    auto it = index_.find(name);
    if (it != index_.end()) return families_[it->second];
    index_[name] = families_.size();
    families_.push_back(MetricFamily{name, help, type, {}});
    return families_.back();
  }
  void Gauge(const std::string& name, const std::string& help,
             std::vector<ClientMetric::Label> labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = value;
    Family(name, help, MetricType::Gauge).metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> Take() { return std::move(families_); }

 private:
  std::vector<MetricFamily> families_;
  std::map<std::string, size_t> index_;
};

}  // namespace

std::vector<MetricFamily> NodeCollector::Collect() const { return Families(snapshot_()); }

namespace {

// The agent itself: build, start, health, config.
void AddAgentFamilies(Builder& b, const roced::v1::NodeState& state) {
  b.Gauge("roced_build_info", "roced build: version and git commit; value is always 1.",
          {{"version", state.agent().version()}, {"git_commit", state.agent().git_commit()}}, 1);
  if (state.agent().has_started_at()) {
    b.Gauge("roced_start_time_seconds", "Unix time the agent started.", {},
            static_cast<double>(state.agent().started_at().seconds()));
  }
  for (const auto& c : state.agent().components()) {
    b.Gauge("roced_component_healthy",
            "1 when the agent component (discovery, config, state, grpc, metrics) is healthy.",
            {{"component", c.name()}}, c.healthy() ? 1 : 0);
  }
  b.Gauge("roced_devices", "RDMA devices discovered on the node.", {},
          static_cast<double>(state.devices_size()));
  b.Gauge("roced_config_generation", "Generation of the accepted desired config (0: none).", {},
          static_cast<double>(state.config().generation()));
  b.Gauge("roced_converged",
          "1 when the last reconcile pass found every managed field as desired (0 with no config).", {},
          state.config().generation() > 0 && state.config().converged() ? 1 : 0);
  b.Gauge("roced_config_provisional",
          "1 while an applied config awaits ConfirmConfig (it rolls back at the deadline).", {},
          state.config().has_confirm_deadline() ? 1 : 0);
}

// One RDMA device: inventory, verbs context, PCIe link.
void AddDeviceFamilies(Builder& b, const roced::v1::RdmaDevice& dev) {
  const std::string& d = dev.name();
  b.Gauge("roced_device_info", "RDMA device inventory; value is always 1.",
          {{"device", d},
           {"driver", dev.driver()},
           {"fw_version", dev.fw_version()},
           {"pci_address", dev.pci_address()},
           {"board_id", dev.board_id()},
           {"numa_node", absl::StrCat(dev.numa_node())},
           {"parent_netdev", dev.parent_netdev()}},
          1);
  b.Gauge("roced_device_verbs_open",
          "1 while the agent holds an open verbs context for the device.", {{"device", d}},
          dev.verbs_open() ? 1 : 0);
  if (!dev.pci_address().empty() && dev.pcie().max_width() > 0) {
    std::vector<ClientMetric::Label> l = {{"device", d}, {"pci_address", dev.pci_address()}};
    b.Gauge("roced_pcie_link_width_lanes", "PCIe link width the device trained at.", l,
            dev.pcie().current_width());
    b.Gauge("roced_pcie_link_max_width_lanes", "Widest PCIe link the device supports.", l,
            dev.pcie().max_width());
    b.Gauge("roced_pcie_link_speed_transfers_per_second",
            "PCIe link speed the device trained at (per lane).", l,
            dev.pcie().current_speed_gts() * 1e9);
    b.Gauge("roced_pcie_link_max_speed_transfers_per_second",
            "Fastest PCIe link speed the device supports (per lane).", l,
            dev.pcie().max_speed_gts() * 1e9);
    b.Gauge("roced_pcie_link_degraded",
            "1 when the PCIe link trained narrower or slower than the device supports.", l,
            dev.pcie().degraded() ? 1 : 0);
  }
}

// One RDMA port of device `d`: inventory, state, rate, MTUs, GIDs.
void AddPortFamilies(Builder& b, const std::string& d, const roced::v1::Port& port) {
  std::vector<ClientMetric::Label> l = {
      {"device", d}, {"port", absl::StrCat(port.number())}, {"netdev", port.netdev()}};
  auto with = [&l](const char* k, const std::string& v) {
    auto out = l;
    out.push_back({k, v});
    return out;
  };
  b.Gauge("roced_port_info", "RDMA port inventory; value is always 1.",
          with("link_layer", port.link_layer()), 1);
  for (auto s : {roced::v1::PORT_STATE_DOWN, roced::v1::PORT_STATE_INIT,
                 roced::v1::PORT_STATE_ARMED, roced::v1::PORT_STATE_ACTIVE,
                 roced::v1::PORT_STATE_ACTIVE_DEFER}) {
    b.Gauge("roced_port_state",
            "RDMA port logical state: 1 for the current state, 0 for the others.",
            with("state", PortStateLabel(s)), port.state() == s ? 1 : 0);
  }
  b.Gauge("roced_port_rate_bytes_per_second", "RDMA port signalling rate.", l,
          port.rate_gbps() * 1e9 / 8);
  b.Gauge("roced_port_active_mtu_bytes", "RDMA port active (IB) MTU.", l, port.active_mtu());
  if (!port.netdev().empty()) {
    b.Gauge("roced_netdev_mtu_bytes", "MTU of the netdev carrying the port's RoCE traffic.", l,
            port.netdev_mtu());
    b.Gauge("roced_netdev_up", "1 when the port's netdev operstate is up.", l,
            port.netdev_operstate() == "up" ? 1 : 0);
  }
  std::map<std::string, int> by_type = {{"ib", 0}, {"roce_v1", 0}, {"roce_v2", 0}};
  for (const auto& gid : port.gids()) by_type[GidTypeLabel(gid.type())]++;
  for (const auto& [type, count] : by_type) {
    if (type == "ib" && port.link_layer() == "Ethernet") continue;
    b.Gauge("roced_port_gids", "Populated GID table entries by type.", with("type", type),
            count);
  }
}

// One RoCE port's netdev driver (InterfaceQos.driver): what it is, whether
// an agent in the NIC owns DCB, and how each managed field reaches the NIC.
void AddDriverFamilies(Builder& b, const roced::v1::InterfaceQos& q) {
  const roced::v1::DriverCapability& d = q.driver();
  if (d.name().empty()) return;
  std::vector<ClientMetric::Label> l = {
      {"device", q.rdma_device()}, {"port", absl::StrCat(q.port())}, {"netdev", q.netdev()}, {"driver", d.name()}};
  auto with = [&l](std::vector<ClientMetric::Label> more) {
    auto out = l;
    out.insert(out.end(), more.begin(), more.end());
    return out;
  };
  b.Gauge("roced_netdev_driver_info",
          "The RoCE netdev's driver as ethtool -i reports it, and roced's profile for it; value is always 1.",
          with({{"version", d.version()}, {"firmware_version", d.firmware_version()}, {"profile", d.profile()}}), 1);
  b.Gauge("roced_dcb_firmware_agent",
          "1 while an agent in the NIC (firmware DCBX or LLDP agent) owns the port's DCB and roced only reports it "
          "(rocectl status names the fix).",
          l, d.firmware_agent().empty() ? 0 : 1);
  for (const auto& f : d.fields()) {
    b.Gauge("roced_device_capability",
            "1 when roced can manage the field on the port's driver, 0 when the driver gives it no control "
            "(surface: where the field is written on this driver).",
            with({{"field", f.field()}, {"surface", f.surface()}}), f.manageable() ? 1 : 0);
  }
}

}  // namespace

std::vector<MetricFamily> NodeCollector::Families(const roced::v1::NodeState& state) {
  Builder b;
  AddAgentFamilies(b, state);
  for (const auto& dev : state.devices()) {
    AddDeviceFamilies(b, dev);
    for (const auto& port : dev.ports()) AddPortFamilies(b, dev.name(), port);
  }
  for (const auto& q : state.interface_qos()) AddDriverFamilies(b, q);
  return b.Take();
}

}  // namespace roced::metrics
