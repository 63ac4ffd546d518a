#include "metrics/lldp_collector.h"

#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "util/proto_time.h"

namespace roced::metrics {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {

ClientMetric Gauge(std::vector<ClientMetric::Label> labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  return m;
}

}  // namespace

std::string AppSelectorName(uint32_t selector) {
  switch (selector) {
    case 1: return "ethertype";
    case 2: return "tcp_port";
    case 3: return "udp_port";
    case 4: return "tcp_udp_port";
    case 5: return "dscp";
    default: return absl::StrCat("selector_", selector);
  }
}

std::vector<MetricFamily> LldpCollector::Families(const std::vector<roced::v1::LldpNeighbor>& neighbors) {
  if (neighbors.empty()) return {};
  MetricFamily info{"roced_lldp_neighbor_info",
                    "An LLDP neighbour heard on a netdev within its TTL (value 1): the switch's chassis "
                    "ID, port ID and system name.",
                    MetricType::Gauge, {}};
  MetricFamily heard{"roced_lldp_neighbor_last_heard_timestamp_seconds",
                     "When the neighbour's last LLDPDU arrived, in seconds since the Unix epoch.",
                     MetricType::Gauge, {}};
  MetricFamily pfc{"roced_switch_pfc_enabled",
                   "Whether the switch advertises PFC on a priority (1) or not (0), from LLDP.",
                   MetricType::Gauge, {}};
  MetricFamily app{"roced_switch_app_priority",
                   "The priority the switch's LLDP application table maps a protocol to.",
                   MetricType::Gauge, {}};
  MetricFamily frame{"roced_switch_max_frame_size_bytes",
                     "The switch port's maximum frame size (IEEE 802.3 TLV), Ethernet header and FCS "
                     "included.",
                     MetricType::Gauge, {}};
  // One PFC/APP/frame-size view per netdev: the first neighbour's (a RoCE
  // port has one switch; several neighbours are listed in the info family).
  std::set<std::string> seen;
  for (const auto& n : neighbors) {
    // A driver's view of its peer has DCB values but no identity.
    const bool identified = n.chassis_id_subtype() != "driver";
    if (identified) {
      info.metric.push_back(Gauge({{"netdev", n.netdev()}, {"chassis_id", n.chassis_id()},
                                 {"port_id", n.port_id()}, {"system_name", n.system_name()}}, 1));
    heard.metric.push_back(Gauge({{"netdev", n.netdev()}, {"chassis_id", n.chassis_id()}, {"port_id", n.port_id()}},
                                   absl::ToDoubleSeconds(util::FromProto(n.last_heard()) - absl::UnixEpoch())));
    }
    if (!seen.insert(n.netdev()).second) continue;
    if (n.has_pfc()) {
      for (int p = 0; p < 8; ++p) {
        pfc.metric.push_back(Gauge({{"netdev", n.netdev()}, {"priority", absl::StrCat(p)}}, (n.pfc().enabled() >> p) & 1));
      }
    }
    // IEEE lets a table map one protocol to several priorities; one series
    // each, the first entry's (a second would be a duplicate series).
    std::set<std::pair<uint32_t, uint32_t>> apps;
    for (const auto& a : n.apps()) {
      if (!apps.insert({a.selector(), a.protocol()}).second) continue;
      app.metric.push_back(Gauge({{"netdev", n.netdev()}, {"selector", AppSelectorName(a.selector())},
                                  {"protocol", absl::StrCat(a.protocol())}}, a.priority()));
    }
    if (n.has_max_frame_size()) frame.metric.push_back(Gauge({{"netdev", n.netdev()}}, n.max_frame_size()));
  }
  std::vector<MetricFamily> out;
  for (MetricFamily* f : {&info, &heard, &pfc, &app, &frame}) {
    if (!f->metric.empty()) out.push_back(std::move(*f));
  }
  return out;
}

}  // namespace roced::metrics
