#include "metrics/dcb_collector.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace roced::metrics {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

std::vector<MetricFamily> DcbCollector::Families(const std::vector<DcbPfcReading>& readings) {
  if (readings.empty()) return {};
  MetricFamily enabled{"roced_dcb_pfc_enabled",
                       "Whether PFC is enabled on a priority (1) or not (0), as DCB netlink reports it.",
                       MetricType::Gauge,
                       {}};
  MetricFamily requests{"roced_dcb_pfc_requests_total",
                        "PFC frames the netdev sent for a priority, as its driver reports them to DCB "
                        "netlink (0 where the driver does not fill the count).",
                        MetricType::Counter,
                        {}};
  MetricFamily indications{"roced_dcb_pfc_indications_total",
                           "PFC frames the netdev received for a priority, as its driver reports them to "
                           "DCB netlink (0 where the driver does not fill the count).",
                           MetricType::Counter,
                           {}};
  MetricFamily host_mode{"roced_dcb_dcbx_host_mode",
                         "Whether the host runs DCBX on the netdev (1) or the NIC's firmware or an LLDP agent "
                         "does (0: host writes of PFC, ETS and the DSCP map are replaced by what the switch "
                         "advertises to a willing port).",
                         MetricType::Gauge,
                         {}};
  MetricFamily prio_tc{"roced_dcb_priority_traffic_class",
                       "1 for the traffic class each priority maps to (ETS prio_tc): the join for counters a "
                       "driver keeps per traffic class (mlx5's rx_prio<N>_buf_discard, _cong_discard, _marked).",
                       MetricType::Gauge,
                       {}};
  for (const auto& r : readings) {
    for (int p = 0; r.prio_tc && p < 8; ++p) {
      ClientMetric m;
      m.label = {{"netdev", r.netdev}, {"priority", absl::StrCat(p)}, {"tc", absl::StrCat((*r.prio_tc)[p])}};
      m.gauge.value = 1;
      prio_tc.metric.push_back(std::move(m));
    }
    if (r.dcbx) {
      ClientMetric m;
      m.label = {{"netdev", r.netdev}};
      m.gauge.value = hal::DcbxHostMode(*r.dcbx) ? 1 : 0;
      host_mode.metric.push_back(std::move(m));
    }
    for (int p = 0; p < 8; ++p) {
      std::vector<ClientMetric::Label> labels = {{"netdev", r.netdev}, {"priority", absl::StrCat(p)}};
      ClientMetric e;
      e.label = labels;
      e.gauge.value = (r.pfc.pfc_en >> p) & 1;
      enabled.metric.push_back(std::move(e));
      ClientMetric q;
      q.label = labels;
      q.counter.value = static_cast<double>(r.pfc.requests[p]);
      requests.metric.push_back(std::move(q));
      ClientMetric i;
      i.label = labels;
      i.counter.value = static_cast<double>(r.pfc.indications[p]);
      indications.metric.push_back(std::move(i));
    }
  }
  std::vector<MetricFamily> out = {std::move(enabled), std::move(requests), std::move(indications)};
  if (!host_mode.metric.empty()) out.push_back(std::move(host_mode));
  if (!prio_tc.metric.empty()) out.push_back(std::move(prio_tc));
  return out;
}

std::vector<MetricFamily> DcbCollector::Collect() const {
  std::vector<DcbPfcReading> readings;
  std::set<std::string> seen;
  for (const std::string& netdev : netdevs_()) {
    if (netdev.empty() || !seen.insert(netdev).second) continue;
    auto reading = dcb_->Get(netdev);
    if (!reading.ok() || !reading->pfc) continue;  // gone, or no DCB
    std::optional<std::array<uint8_t, 8>> prio_tc;
    if (reading->ets) prio_tc = reading->ets->prio_tc;
    readings.push_back({netdev, *reading->pfc, reading->dcbx, prio_tc});
  }
  return Families(readings);
}

}  // namespace roced::metrics
