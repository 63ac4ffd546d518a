#include "metrics/counter_collector.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "metrics/exposition.h"

namespace roced::metrics {

using hal::CounterSource;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

namespace {

constexpr CounterSource kPma = CounterSource::kCounters;
constexpr CounterSource kHw = CounterSource::kHwCounters;

constexpr const char* kPortCounterMetric = "roced_rdma_port_counters_total";
constexpr const char* kHwCounterMetric = "roced_rdma_hw_counters_total";

struct EthtoolFamily {
  hal::PfcStatKind kind;
  const char* metric;
  const char* name;  // stable name in GetCounters
  const char* help;
  double scale;
  // What the statistic's index counts: a priority, or (mlx5's per-TC
  // groups, named "prio" all the same) a traffic class.
  bool per_tc = false;
};

const std::vector<EthtoolFamily>& EthtoolFamilies() {
  static const auto* families = new std::vector<EthtoolFamily>{
      {hal::PfcStatKind::kRxPause, "roced_pfc_pause_frames_received_total",
       "pfc_pause_frames_received",
       "PFC pause frames received per priority: the peer asked us to stop sending (ethtool "
       "rx_prio<N>_pause on mlx5, rx_pfc_ena_frames_pri<N> on bnxt_en, rx_priority_<N>_xoff.nic on ice; "
       "label stat).",
       1},
      {hal::PfcStatKind::kTxPause, "roced_pfc_pause_frames_sent_total", "pfc_pause_frames_sent",
       "PFC pause frames sent per priority: we asked the peer to stop sending (ethtool "
       "tx_prio<N>_pause on mlx5, tx_pfc_ena_frames_pri<N> on bnxt_en, tx_priority_<N>_xoff.nic on ice; "
       "label stat).",
       1},
      {hal::PfcStatKind::kRxPauseDuration, "roced_pfc_pause_received_duration_seconds_total",
       "pfc_pause_received_duration_microseconds",
       "Time the priority was paused by received PFC frames (ethtool "
       "rx_prio<N>_pause_duration on mlx5, pfc_pri<N>_rx_duration_us on bnxt_en; microseconds, converted).",
       1e-6},
      {hal::PfcStatKind::kTxPauseDuration, "roced_pfc_pause_sent_duration_seconds_total",
       "pfc_pause_sent_duration_microseconds",
       "Time our PFC frames held the peer's priority paused (ethtool "
       "tx_prio<N>_pause_duration on mlx5, pfc_pri<N>_tx_duration_us on bnxt_en; microseconds, converted).",
       1e-6},
      {hal::PfcStatKind::kRxPauseTransition, "roced_pfc_pause_transitions_total",
       "pfc_pause_transitions",
       "XOFF to XON transitions of received PFC per priority (ethtool "
       "rx_prio<N>_pause_transition on mlx5, pfc_pri<N>_rx_transitions on bnxt_en, the XON frames "
       "rx_priority_<N>_xon.nic on ice).",
       1},
      // mlx5 reads these three from its per-traffic-class counter groups
      // (en_stats.c: MLX5_PER_TRAFFIC_CLASS_COUNTERS_GROUP and
      // ..._CONGESTION_GROUP, indexed by prio_tc = the TC) although their
      // names say "prio": labelled tc; roced_dcb_priority_traffic_class
      // maps priorities to TCs.
      {hal::PfcStatKind::kRxBufferDiscard, "roced_netdev_tc_buffer_discards_total", "tc_buffer_discards",
       "Received packets dropped for lack of a receive buffer, per traffic class (ethtool "
       "rx_prio<N>_buf_discard, which mlx5 counts per TC; rx_discard_packets_cos<N> per queue on bnxt_en).",
       1, true},
      {hal::PfcStatKind::kRxCongestionDiscard, "roced_netdev_tc_congestion_discards_total",
       "tc_congestion_discards",
       "Received packets dropped by the NIC's congestion control (WRED), per traffic class (ethtool "
       "rx_prio<N>_cong_discard, which mlx5 counts per TC).",
       1, true},
      {hal::PfcStatKind::kRxEcnMarked, "roced_netdev_tc_ecn_marked_packets_total", "tc_ecn_marked_packets",
       "Received packets the NIC marked ECN-CE, per traffic class (ethtool rx_prio<N>_marked, which mlx5 "
       "counts per TC).",
       1, true},
      {hal::PfcStatKind::kRxPausePhy, "roced_netdev_link_pause_frames_received_total",
       "link_pause_frames_received",
       "Link-level (802.3x) pause frames received on the physical port (ethtool "
       "rx_pause_ctrl_phy on mlx5, rx_pause_frames on bnxt_en, link_xoff_rx.nic on ice).",
       1},
      {hal::PfcStatKind::kTxPausePhy, "roced_netdev_link_pause_frames_sent_total",
       "link_pause_frames_sent",
       "Link-level (802.3x) pause frames sent on the physical port (ethtool tx_pause_ctrl_phy on "
       "mlx5, tx_pause_frames on bnxt_en, link_xoff_tx.nic on ice).",
       1},
      {hal::PfcStatKind::kRxDiscardsPhy, "roced_netdev_receive_discards_total",
       "receive_discards",
       "Received packets the physical port dropped for lack of buffer (ethtool "
       "rx_discards_phy on mlx5, rx_stat_discard on bnxt_en, rx_dropped.nic on ice).",
       1},
      {hal::PfcStatKind::kTxPauseStormWarning, "roced_pfc_tx_pause_storm_warnings_total",
       "tx_pause_storm_warnings",
       "Times the NIC had been sending pause frames for a long time (ethtool "
       "tx_pause_storm_warning_events).",
       1},
      {hal::PfcStatKind::kTxPauseStormError, "roced_pfc_tx_pause_storm_errors_total",
       "tx_pause_storm_errors",
       "Times the NIC's own storm prevention stopped it sending pause frames (ethtool "
       "tx_pause_storm_error_events); drops are possible meanwhile.",
       1},
  };
  return *families;
}

const EthtoolFamily* FindEthtoolFamily(hal::PfcStatKind kind) {
  for (const EthtoolFamily& f : EthtoolFamilies()) {
    if (f.kind == kind) return &f;
  }
  return nullptr;
}

// One (device, port): its counters/ and hw_counters/ sets, either may be
// absent.
struct PortView {
  const std::string* device = nullptr;
  uint32_t port = 0;
  std::string netdev;
  const hal::PortCounterSet* sets[2] = {nullptr, nullptr};
};

int Index(CounterSource source) { return source == kPma ? 0 : 1; }

const hal::CounterValue* Find(const hal::PortCounterSet* set, const char* file) {
  if (set == nullptr) return nullptr;
  auto it = std::lower_bound(
      set->values.begin(), set->values.end(), file,
      [](const hal::CounterValue& v, const char* name) { return v.name < name; });
  if (it == set->values.end() || it->name != file) return nullptr;
  return &*it;
}

// A well-known counter resolved on one port.
struct Resolved {
  const WellKnownCounter* counter;
  double value;  // scaled
  uint64_t raw_sum;
  std::vector<const hal::CounterValue*> files;
  CounterSource source;  // of the first file
};

std::vector<Resolved> Resolve(const PortView& port) {
  std::vector<Resolved> out;
  for (const WellKnownCounter& c : WellKnownCounters()) {
    for (const auto& alternative : c.alternatives) {
      Resolved r{&c, 0, 0, {}, alternative.front().first};
      for (const auto& [source, file] : alternative) {
        const hal::CounterValue* v = Find(port.sets[Index(source)], file);
        if (v == nullptr) continue;
        if (r.files.empty()) r.source = source;
        r.files.push_back(v);
        r.raw_sum += v->value;
      }
      if (r.files.empty()) continue;
      r.value = static_cast<double>(r.raw_sum) * c.scale;
      out.push_back(std::move(r));
      break;
    }
  }
  return out;
}

// Files that alone feed a well-known metric: left out of the generic
// families and shown under the stable name in GetCounters.
std::map<const hal::CounterValue*, const WellKnownCounter*> SoleSources(
    const std::vector<Resolved>& resolved) {
  std::map<const hal::CounterValue*, const WellKnownCounter*> out;
  for (const Resolved& r : resolved) {
    if (r.files.size() == 1) out[r.files.front()] = r.counter;
  }
  return out;
}

std::vector<PortView> GroupPorts(const std::vector<hal::PortCounterSet>& sets,
                                 const std::vector<PortNetdev>& ports) {
  std::map<std::pair<std::string, uint32_t>, const std::string*> netdevs;
  for (const PortNetdev& p : ports) netdevs[{p.device, p.port}] = &p.netdev;
  std::vector<PortView> out;
  for (const hal::PortCounterSet& s : sets) {
    if (out.empty() || *out.back().device != s.device || out.back().port != s.port) {
      PortView v;
      v.device = &s.device;
      v.port = s.port;
      auto it = netdevs.find({s.device, s.port});
      if (it != netdevs.end()) v.netdev = *it->second;
      out.push_back(std::move(v));
    }
    out.back().sets[Index(s.source)] = &s;
  }
  return out;
}

// Where the families go: prometheus-cpp's MetricFamily (Collect(), tests)
// or exposition text (the scrape path). Both get the same calls in the same
// order from Emit(), so both say the same thing.
struct Label {
  std::string_view name;
  std::string_view value;
};

// Every family is declared up front so the exposition order does not
// depend on which driver happens to come first; these are the indexes.
struct FamilyDecl {
  const char* name;
  const char* help;
};
const std::vector<FamilyDecl>& Declared() {
  static const auto* decls = [] {
    auto* d = new std::vector<FamilyDecl>();
    for (const WellKnownCounter& c : WellKnownCounters()) d->push_back({c.metric, c.help});
    d->push_back({kPortCounterMetric,
                  "RDMA port PMA counters (sysfs ports/<p>/counters/<counter>) without a "
                  "well-known name, as the kernel reports them."});
    d->push_back({kHwCounterMetric,
                  "RDMA driver counters (sysfs ports/<p>/hw_counters/<counter>) without a "
                  "well-known name, as the driver reports them."});
    for (const EthtoolFamily& f : EthtoolFamilies()) d->push_back({f.metric, f.help});
    return d;
  }();
  return *decls;
}
size_t DeclIndex(const char* name) {
  static const auto* index = [] {
    auto* m = new std::map<std::string, size_t, std::less<>>();
    for (size_t i = 0; i < Declared().size(); ++i) (*m)[Declared()[i].name] = i;
    return m;
  }();
  return index->find(std::string_view(name))->second;
}

class FamilySink {
 public:
  FamilySink() {
    for (const FamilyDecl& d : Declared()) {
      families_.push_back(MetricFamily{d.name, d.help, MetricType::Counter, {}});
    }
  }
  void Add(size_t family, std::initializer_list<Label> labels, double value) {
    ClientMetric m;
    m.label.reserve(labels.size());
    for (const Label& l : labels) m.label.push_back({std::string(l.name), std::string(l.value)});
    m.counter.value = value;
    families_[family].metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> Take() {
    std::vector<MetricFamily> out;
    for (MetricFamily& f : families_) {
      if (!f.metric.empty()) out.push_back(std::move(f));
    }
    return out;
  }

 private:
  std::vector<MetricFamily> families_;
};

// One buffer per family (kept by the caller between scrapes: cleared, not
// freed), joined in declaration order with their HELP and TYPE lines.
class TextSink {
 public:
  explicit TextSink(std::vector<std::string>* bodies) : bodies_(bodies) {
    bodies_->resize(Declared().size());
    for (std::string& b : *bodies_) b.clear();
  }
  void Add(size_t family, std::initializer_list<Label> labels, double value) {
    std::string& out = (*bodies_)[family];
    out.append(Declared()[family].name);
    out.push_back('{');
    bool first = true;
    for (const Label& l : labels) {
      if (!first) out.push_back(',');
      first = false;
      out.append(l.name);
      out.append("=\"");
      AppendEscapedLabelValue(l.value, &out);
      out.push_back('"');
    }
    out.append("} ");
    AppendValue(value, &out);
    out.push_back('\n');
  }
  void AppendTo(std::string* out) const {
    for (size_t i = 0; i < bodies_->size(); ++i) {
      const std::string& body = (*bodies_)[i];
      if (body.empty()) continue;
      AppendFamilyHeader(Declared()[i].name, Declared()[i].help, MetricType::Counter, out);
      out->append(body);
    }
  }

 private:
  std::vector<std::string>* bodies_;
};

template <class Sink>
void Emit(const std::vector<hal::PortCounterSet>& sets, const std::vector<PortNetdev>& ports,
          const std::vector<NetdevStats>& netdevs, Sink& sink) {
  static const size_t kPort = DeclIndex(kPortCounterMetric), kHwIdx = DeclIndex(kHwCounterMetric);
  char port_text[12];
  for (const PortView& port : GroupPorts(sets, ports)) {
    auto [end, ec] = std::to_chars(port_text, port_text + sizeof(port_text), port.port);
    const std::string_view port_label(port_text, static_cast<size_t>(end - port_text));
    std::vector<Resolved> resolved = Resolve(port);
    for (const Resolved& r : resolved) {
      sink.Add(DeclIndex(r.counter->metric),
               {{"device", *port.device}, {"port", port_label}, {"netdev", port.netdev}}, r.value);
    }
    auto sole = SoleSources(resolved);
    for (const hal::PortCounterSet* set : port.sets) {
      if (set == nullptr) continue;
      const size_t family = set->source == kPma ? kPort : kHwIdx;
      for (const hal::CounterValue& v : set->values) {
        if (sole.count(&v)) continue;
        sink.Add(family,
                 {{"device", *port.device},
                  {"port", port_label},
                  {"netdev", port.netdev},
                  {"counter", v.name}},
                 static_cast<double>(v.value));
      }
    }
  }
  char prio_text[4];
  for (const NetdevStats& n : netdevs) {
    for (const hal::EthtoolStat& s : n.stats) {
      std::optional<hal::PfcStatName> parsed = hal::ParsePfcStatName(s.name);
      if (!parsed.has_value()) continue;
      const EthtoolFamily* f = FindEthtoolFamily(parsed->kind);
      if (f == nullptr) continue;  // read by the PFC watchdog only (tx packets)
      const double value = static_cast<double>(s.value) * f->scale;
      // `stat`: the driver's own name for the statistic (ethtool -S).
      if (parsed->priority.has_value()) {
        auto [end, ec] = std::to_chars(prio_text, prio_text + sizeof(prio_text), *parsed->priority);
        sink.Add(DeclIndex(f->metric),
                 {{"netdev", n.netdev},
                  {f->per_tc ? "tc" : "priority", std::string_view(prio_text, static_cast<size_t>(end - prio_text))},
                  {"stat", s.name}},
                 value);
      } else {
        sink.Add(DeclIndex(f->metric), {{"netdev", n.netdev}, {"stat", s.name}}, value);
      }
    }
  }
}

}  // namespace

const std::vector<WellKnownCounter>& WellKnownCounters() {
  static const auto* counters = new std::vector<WellKnownCounter>{
      {"roced_rdma_cnp_sent_total", "cnp_sent",
       "Congestion notification packets sent by the notification point after ECN-marked RoCE "
       "packets arrived (mlx5 np_cnp_sent, irdma cnpSent).",
       1, {{{kHw, "np_cnp_sent"}}, {{kHw, "cnpSent"}}}},
      {"roced_rdma_cnp_handled_total", "cnp_handled",
       "Congestion notification packets the reaction point received and acted on by lowering "
       "its rate (mlx5 rp_cnp_handled, irdma cnpHandled).",
       1, {{{kHw, "rp_cnp_handled"}}, {{kHw, "cnpHandled"}}}},
      {"roced_rdma_ecn_marked_packets_total", "ecn_marked_packets",
       "RoCE packets received with ECN-CE set (mlx5 np_ecn_marked_roce_packets, irdma RxECNMrkd).", 1,
       {{{kHw, "np_ecn_marked_roce_packets"}}, {{kHw, "RxECNMrkd"}}}},
      {"roced_rdma_out_of_sequence_total", "out_of_sequence",
       "Packets the responder received with a PSN beyond the expected one (mlx5 "
       "out_of_sequence, rxe out_of_seq_request).",
       1, {{{kHw, "out_of_sequence"}}, {{kHw, "out_of_seq_request"}}}},
      {"roced_rdma_packet_sequence_errors_total", "packet_sequence_errors",
       "Sequence-error NAKs the requester received (mlx5 packet_seq_err, rxe rcvd_seq_err).", 1,
       {{{kHw, "packet_seq_err"}}, {{kHw, "rcvd_seq_err"}}}},
      {"roced_rdma_local_ack_timeouts_total", "local_ack_timeouts",
       "Times a requester's ACK timer expired within the retry limit (mlx5 "
       "local_ack_timeout_err).",
       1, {{{kHw, "local_ack_timeout_err"}}}},
      {"roced_rdma_rnr_nak_retries_total", "rnr_nak_retries",
       "Receiver-not-ready NAKs the requester received and retried after (mlx5 "
       "rnr_nak_retry_err, rxe rcvd_rnr_err).",
       1, {{{kHw, "rnr_nak_retry_err"}}, {{kHw, "rcvd_rnr_err"}}}},
      {"roced_rdma_duplicate_requests_total", "duplicate_requests",
       "Requests the responder received again after executing them (duplicate_request).", 1,
       {{{kHw, "duplicate_request"}}}},
      {"roced_rdma_retransmits_total", "retransmits",
       "Go-back-N retransmission episodes: the requester resent from an unacknowledged PSN "
       "after an ACK timeout or a NAK (rxe completer_retry_err; mlx5 local_ack_timeout_err + "
       "packet_seq_err + implied_nak_seq_err).",
       1,
       {{{kHw, "completer_retry_err"}},
        {{kHw, "local_ack_timeout_err"}, {kHw, "packet_seq_err"}, {kHw, "implied_nak_seq_err"}}}},
      {"roced_port_transmit_bytes_total", "transmit_bytes",
       "Bytes the RDMA port sent (PMA port_xmit_data, which counts 4-byte words, times 4).", 4,
       {{{kPma, "port_xmit_data"}}}},
      {"roced_port_receive_bytes_total", "receive_bytes",
       "Bytes the RDMA port received (PMA port_rcv_data, which counts 4-byte words, times 4).", 4,
       {{{kPma, "port_rcv_data"}}}},
      {"roced_port_transmit_packets_total", "transmit_packets",
       "Packets the RDMA port sent (PMA port_xmit_packets, rxe sent_pkts).", 1,
       {{{kPma, "port_xmit_packets"}}, {{kHw, "sent_pkts"}}}},
      {"roced_port_receive_packets_total", "receive_packets",
       "Packets the RDMA port received (PMA port_rcv_packets, rxe rcvd_pkts).", 1,
       {{{kPma, "port_rcv_packets"}}, {{kHw, "rcvd_pkts"}}}},
  };
  return *counters;
}

std::vector<PortNetdev> PortNetdevs(
    const google::protobuf::RepeatedPtrField<roced::v1::RdmaDevice>& devices) {
  std::vector<PortNetdev> out;
  for (const roced::v1::RdmaDevice& d : devices) {
    for (const roced::v1::Port& p : d.ports()) out.push_back({d.name(), p.number(), p.netdev()});
  }
  return out;
}

std::vector<MetricFamily> CounterCollector::Collect() const {
  std::vector<PortNetdev> ports = ports_();
  std::vector<NetdevStats> netdevs;
  if (ethtool_ != nullptr) netdevs = ReadNetdevStats(ethtool_, ports);
  return Families(files_->Read(), ports, netdevs);
}

std::vector<NetdevStats> ReadNetdevStats(hal::NetdevStatsReader* reader,
                                         const std::vector<PortNetdev>& ports) {
  std::vector<NetdevStats> out;
  std::set<std::string> seen;
  for (const PortNetdev& p : ports) {
    if (p.netdev.empty() || !seen.insert(p.netdev).second) continue;
    absl::StatusOr<std::vector<hal::EthtoolStat>> stats = reader->ReadStats(p.netdev);
    // A netdev that went away or keeps no statistics has nothing to report;
    // its series simply end.
    if (!stats.ok()) continue;
    NetdevStats n;
    n.netdev = p.netdev;
    for (hal::EthtoolStat& s : *stats) {
      std::optional<hal::PfcStatName> parsed = hal::ParsePfcStatName(s.name);
      if (parsed.has_value() && FindEthtoolFamily(parsed->kind) != nullptr) n.stats.push_back(std::move(s));
    }
    if (!n.stats.empty()) out.push_back(std::move(n));
  }
  return out;
}

std::vector<MetricFamily> CounterCollector::Families(const std::vector<hal::PortCounterSet>& sets,
                                                     const std::vector<PortNetdev>& ports,
                                                     const std::vector<NetdevStats>& netdevs) {
  FamilySink sink;
  Emit(sets, ports, netdevs, sink);
  return sink.Take();
}

void CounterCollector::AppendText(const std::vector<hal::PortCounterSet>& sets,
                                  const std::vector<PortNetdev>& ports,
                                  const std::vector<NetdevStats>& netdevs,
                                  std::vector<std::string>* scratch, std::string* out) {
  TextSink sink(scratch);
  Emit(sets, ports, netdevs, sink);
  sink.AppendTo(out);
}

void CounterCollector::AppendText(std::string* out) const {
  std::vector<PortNetdev> ports = ports_();
  std::vector<NetdevStats> netdevs;
  if (ethtool_ != nullptr) netdevs = ReadNetdevStats(ethtool_, ports);
  std::unique_ptr<Scratch> kept;
  {
    std::lock_guard<std::mutex> lock(scratch_mu_);
    if (!scratch_pool_.empty()) {
      kept = std::move(scratch_pool_.back());
      scratch_pool_.pop_back();
    }
  }
  if (kept == nullptr) kept = std::make_unique<Scratch>();
  files_->ReadInto(&kept->sets);
  AppendText(kept->sets, ports, netdevs, &kept->buffers, out);
  std::lock_guard<std::mutex> lock(scratch_mu_);
  scratch_pool_.push_back(std::move(kept));
}

std::vector<roced::v1::CounterSet> BuildCounterSets(const std::vector<hal::PortCounterSet>& sets,
                                                    const std::vector<PortNetdev>& ports,
                                                    const std::vector<NetdevStats>& netdevs) {
  std::vector<roced::v1::CounterSet> out;
  for (const PortView& port : GroupPorts(sets, ports)) {
    std::vector<Resolved> resolved = Resolve(port);
    auto sole = SoleSources(resolved);
    for (const hal::PortCounterSet* set : port.sets) {
      if (set == nullptr) continue;
      roced::v1::CounterSet cs;
      cs.set_device(*port.device);
      cs.set_port(port.port);
      cs.set_netdev(port.netdev);
      cs.set_source(hal::CounterSourceName(set->source));
      for (const hal::CounterValue& v : set->values) {
        roced::v1::Counter* c = cs.add_counters();
        c->set_source_name(v.name);
        auto it = sole.find(&v);
        if (it == sole.end()) {
          c->set_name(v.name);
          c->set_value(v.value);
        } else {
          c->set_name(it->second->name);
          // Integer arithmetic: a double loses precision above 2^53.
          c->set_value(v.value * static_cast<uint64_t>(it->second->scale));
        }
      }
      // Sums (mlx5 retransmits) appear beside the files they add up.
      for (const Resolved& r : resolved) {
        if (r.files.size() < 2 || r.source != set->source) continue;
        roced::v1::Counter* c = cs.add_counters();
        c->set_name(r.counter->name);
        std::vector<std::string> names;
        for (const hal::CounterValue* f : r.files) names.push_back(f->name);
        c->set_source_name(absl::StrJoin(names, "+"));
        c->set_value(r.raw_sum);
      }
      out.push_back(std::move(cs));
    }
  }
  std::map<std::string, const PortNetdev*> by_netdev;
  for (const PortNetdev& p : ports) by_netdev.emplace(p.netdev, &p);
  for (const NetdevStats& n : netdevs) {
    roced::v1::CounterSet cs;
    cs.set_netdev(n.netdev);
    cs.set_source("ethtool");
    auto it = by_netdev.find(n.netdev);
    if (it != by_netdev.end()) {
      cs.set_device(it->second->device);
      cs.set_port(it->second->port);
    }
    for (const hal::EthtoolStat& s : n.stats) {
      std::optional<hal::PfcStatName> parsed = hal::ParsePfcStatName(s.name);
      if (!parsed.has_value()) continue;
      const EthtoolFamily* f = FindEthtoolFamily(parsed->kind);
      if (f == nullptr) continue;
      roced::v1::Counter* c = cs.add_counters();
      c->set_name(f->name);
      c->set_source_name(s.name);
      c->set_value(s.value);
      if (parsed->priority.has_value()) {
        if (f->per_tc) {
          c->set_traffic_class(*parsed->priority);
        } else {
          c->set_priority(*parsed->priority);
        }
      }
    }
    out.push_back(std::move(cs));
  }
  return out;
}

}  // namespace roced::metrics
