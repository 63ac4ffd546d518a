#include "tools/rocectl/format.h"

#include "model/confirm_policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "model/confirm_policy.h"
#include "util/proto_time.h"

namespace roced::ctl {

absl::StatusOr<Output> ParseOutput(const std::string& text) {
  if (text == "table") return Output::kTable;
  if (text == "json") return Output::kJson;
  if (text == "yaml") return Output::kYaml;
  return absl::InvalidArgumentError(
      absl::StrCat("-o: '", text, "' is not one of table, json, yaml"));
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.always_print_primitive_fields = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, opts);
  if (!status.ok()) return absl::StrCat("{\"error\": \"", status.ToString(), "\"}\n");
  return out;
}

std::string ToJsonLine(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.always_print_primitive_fields = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, opts);
  if (!status.ok()) return absl::StrCat("{\"error\": \"", status.ToString(), "\"}");
  return out;
}

namespace {
void ToBlock(YAML::Node node) {
  node.SetStyle(YAML::EmitterStyle::Block);
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) ToBlock(it->second);
  } else if (node.IsSequence()) {
    for (auto it = node.begin(); it != node.end(); ++it) ToBlock(*it);
  }
}
}  // namespace

std::string ToYaml(const google::protobuf::Message& message) { return JsonToYaml(ToJson(message)); }

std::string JsonToYaml(const std::string& json) {
  // JSON is a subset of YAML, so yaml-cpp reads the document as is; only the
  // style needs changing.
  YAML::Node node = YAML::Load(json);
  ToBlock(node);
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

namespace {

// A simple left-aligned table with a header row.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const {
    std::vector<size_t> w;
    for (const auto& r : rows_) {
      if (w.size() < r.size()) w.resize(r.size(), 0);
      for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    }
    std::string out;
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        absl::StrAppend(&line, r[i]);
        if (i + 1 < r.size()) line.append(w[i] - r[i].size() + 2, ' ');
      }
      absl::StrAppend(&out, line, "\n");
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string PortStateName(roced::v1::PortState s) {
  switch (s) {
    case roced::v1::PORT_STATE_DOWN: return "DOWN";
    case roced::v1::PORT_STATE_INIT: return "INIT";
    case roced::v1::PORT_STATE_ARMED: return "ARMED";
    case roced::v1::PORT_STATE_ACTIVE: return "ACTIVE";
    case roced::v1::PORT_STATE_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "?";
  }
}

std::string GidTypeName(roced::v1::GidType t) {
  switch (t) {
    case roced::v1::GID_TYPE_IB: return "IB";
    case roced::v1::GID_TYPE_ROCE_V1: return "RoCE v1";
    case roced::v1::GID_TYPE_ROCE_V2: return "RoCE v2";
    default: return "?";
  }
}

std::string Gts(double v) { return absl::StrFormat("%g GT/s", v); }

// Node, Agent, Config and Health lines.
std::string StatusHeader(const roced::v1::NodeState& state) {
  std::string out;
  const auto& cfg = state.config();
  absl::StrAppend(&out, "Node:    ", state.hostname(), "\n");
  absl::StrAppend(&out, "Agent:   roced ", state.agent().version(), " (", state.agent().git_commit(),
                  ")\n");
  if (cfg.generation() == 0) {
    absl::StrAppend(&out, "Config:  none accepted (nothing managed)\n");
  } else {
    absl::StrAppend(&out, "Config:  generation ", cfg.generation(), " from ",
                    cfg.source() == roced::v1::CONFIG_SOURCE_FILE ? cfg.path()
                    : cfg.source() == roced::v1::CONFIG_SOURCE_GRPC
                        ? (cfg.applied_by().empty() ? "gRPC" : absl::StrCat("gRPC (", cfg.applied_by(), ")"))
                    : cfg.source() == roced::v1::CONFIG_SOURCE_CONFIRM_GATE            ? "confirm-policy rollback"
                    : cfg.source() == roced::v1::CONFIG_SOURCE_ROLLBACK                ? "rollback on request"
                                                                                         : "confirm-timeout rollback",
                    ", mode ", cfg.mode() == roced::v1::MODE_OBSERVE ? "observe" : "enforce",
                    cfg.converged() ? ", converged" : ", NOT converged", "\n");
    if (cfg.has_confirm_policy()) {
      absl::StrAppend(&out, "         provisional, judged by its confirm policy (",
                      model::DescribeConfirmPolicy(cfg.confirm_policy()), "):\n");
      for (const auto& g : cfg.gates()) {
        absl::string_view gate_state = roced::v1::GateState_Name(g.state());
        absl::ConsumePrefix(&gate_state, "GATE_STATE_");
        absl::StrAppend(&out, "           ", absl::StrFormat("%-8s", gate_state), " ", g.gate(), ": ", g.detail(),
                        "\n");
      }
    } else if (cfg.has_confirm_deadline()) {
      absl::StrAppend(&out, "         provisional: rolls back unless confirmed by ",
                      google::protobuf::util::TimeUtil::ToString(cfg.confirm_deadline()), "\n");
    }
    if (cfg.has_last_rollback()) {
      const auto& rb = cfg.last_rollback();
      absl::StrAppend(&out, "         last rollback: generation ", rb.generation(), " at ",
                      google::protobuf::util::TimeUtil::ToString(rb.at()), " (", rb.reason(), ": ", rb.detail(),
                      ")\n");
    }
  }
  if (!cfg.last_error().empty()) {
    absl::StrAppend(&out, "         last change rejected: ", cfg.last_error(), "\n");
  }
  std::vector<std::string> unhealthy;
  for (const auto& c : state.agent().components()) {
    if (!c.healthy()) unhealthy.push_back(absl::StrCat(c.name(), " (", c.message(), ")"));
  }
  absl::StrAppend(&out, "Health:  ", unhealthy.empty() ? "ok" : absl::StrJoin(unhealthy, "; "),
                  "\n\n");
  return out;
}

// The device's PCIE column; a degraded link adds a warning.
std::string PcieText(const roced::v1::RdmaDevice& d, std::vector<std::string>* warnings) {
  std::string pcie = "-";
  if (d.pcie().max_width() > 0) {
    pcie = absl::StrCat(Gts(d.pcie().current_speed_gts()), " x", d.pcie().current_width());
    if (d.pcie().degraded()) {
      absl::StrAppend(&pcie, " (of ", Gts(d.pcie().max_speed_gts()), " x", d.pcie().max_width(),
                      ")");
      warnings->push_back(absl::StrFormat(
          "%s: PCIe link degraded: %s x%d, card supports %s x%d (narrow slot or riser; caps "
          "bandwidth)",
          d.name(), Gts(d.pcie().current_speed_gts()), d.pcie().current_width(),
          Gts(d.pcie().max_speed_gts()), d.pcie().max_width()));
    }
  }
  return pcie;
}

// The device's ports and GIDs as rows; a port not ACTIVE or without a RoCE
// v2 GID adds a warning.
void PortRows(const roced::v1::RdmaDevice& d, Table* ports, Table* gids,
              std::vector<std::string>* warnings) {
  for (const auto& p : d.ports()) {
    int v2 = 0;
    for (const auto& g : p.gids()) {
      if (g.type() == roced::v1::GID_TYPE_ROCE_V2) ++v2;
      gids->Row({d.name(), absl::StrCat(p.number()), absl::StrCat(g.index()), GidTypeName(g.type()),
                 g.netdev().empty() ? "-" : g.netdev(), g.ip_address().empty() ? "-" : g.ip_address(),
                 g.gid()});
    }
    ports->Row({d.name(), absl::StrCat(p.number()), PortStateName(p.state()),
                p.phys_state().empty() ? "-" : p.phys_state(), p.netdev().empty() ? "-" : p.netdev(),
                p.netdev_operstate().empty() ? "-" : p.netdev_operstate(),
                absl::StrFormat("%g Gb/s", p.rate_gbps()),
                absl::StrCat(p.active_mtu(), "/", p.netdev_mtu()), absl::StrCat(v2)});
    if (p.state() != roced::v1::PORT_STATE_ACTIVE) {
      warnings->push_back(absl::StrCat(d.name(), " port ", p.number(), ": not ACTIVE (",
                                       PortStateName(p.state()), ")"));
    } else if (p.link_layer() == "Ethernet" && v2 == 0) {
      warnings->push_back(absl::StrCat(d.name(), " port ", p.number(),
                                       ": no RoCE v2 GID (traffic would run as RoCE v1; is an "
                                       "IP address configured on ", p.netdev(), "?)"));
    }
  }
}

// The managed fields table (empty when nothing is managed); FAILED and
// unsupported fields add a warning.
std::string FieldsSection(const roced::v1::NodeState& state, std::vector<std::string>* warnings) {
  if (state.fields().empty()) return "";
  Table fields({"OBJECT", "FIELD", "DESIRED", "OBSERVED", "SYNC"});
  for (const auto& f : state.fields()) {
    std::string sync;
    switch (f.sync()) {
      case roced::v1::FIELD_SYNC_IN_SYNC: sync = "in sync"; break;
      case roced::v1::FIELD_SYNC_DRIFTED: sync = "DRIFTED"; break;
      case roced::v1::FIELD_SYNC_FAILED: sync = "FAILED"; break;
      case roced::v1::FIELD_SYNC_UNSUPPORTED: sync = "unsupported"; break;
      case roced::v1::FIELD_SYNC_NOT_MANAGEABLE: sync = "not manageable"; break;
      default: sync = "?";
    }
    fields.Row({f.object().empty() ? "-" : f.object(), f.field(), f.desired(), f.observed(), sync});
    if (f.sync() == roced::v1::FIELD_SYNC_FAILED || f.sync() == roced::v1::FIELD_SYNC_UNSUPPORTED ||
        f.sync() == roced::v1::FIELD_SYNC_NOT_MANAGEABLE) {
      warnings->push_back(absl::StrCat(f.object(), " ", f.field(), ": ", f.message()));
    }
  }
  return absl::StrCat("\nManaged fields (desired vs observed):\n", fields.Render());
}

std::string SourceName(roced::v1::DcbSource s) {
  switch (s) {
    case roced::v1::DCB_SOURCE_LLDP_IEEE: return "ieee";
    case roced::v1::DCB_SOURCE_LLDP_CEE: return "cee";
    case roced::v1::DCB_SOURCE_DCB_PEER: return "driver";
    default: return "-";
  }
}

// What each RoCE netdev's switch says over LLDP: who it is, its PFC
// priorities, DSCP map entries and frame size, how long ago it spoke.
std::string SwitchesSection(const roced::v1::NodeState& state) {
  if (state.lldp_neighbors().empty()) return "";
  Table t({"NETDEV", "SWITCH", "PORT", "PFC", "DSCP->PRIO", "MAXFRAME", "DCBX", "HEARD"});
  const absl::Time now = util::FromProto(state.observed_at());
  for (const auto& n : state.lldp_neighbors()) {
    std::vector<std::string> dscp;
    for (const auto& a : n.apps()) {
      if (a.selector() == 5) dscp.push_back(absl::StrCat(a.protocol(), "->", a.priority()));
    }
    std::vector<int> pfc;
    for (int p = 0; p < 8; ++p) {
      if (n.pfc().enabled() & (1u << p)) pfc.push_back(p);
    }
    const absl::Duration age = now - util::FromProto(n.last_heard());
    const bool driver = n.chassis_id_subtype() == "driver";
    t.Row({n.netdev(), driver ? "(from the driver)" : n.system_name().empty() ? n.chassis_id() : n.system_name(),
           driver ? "-" : n.port_id(),
           n.has_pfc() ? absl::StrCat("[", absl::StrJoin(pfc, ","), "]") : "-",
           dscp.empty() ? "-" : absl::StrJoin(dscp, " "),
           n.has_max_frame_size() ? absl::StrCat(n.max_frame_size()) : "-", SourceName(n.pfc().source()),
           !driver && state.has_observed_at() && age >= absl::ZeroDuration() ? absl::StrCat(absl::ToInt64Seconds(age), "s ago")
                                                                  : "-"});
  }
  return absl::StrCat("\nSwitches (LLDP):\n", t.Render());
}

// --- QoS of each RoCE port ---------------------------------------------

// "0-7,26,27": three or more consecutive values as a range.
std::string Ranges(const std::vector<uint32_t>& sorted) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (j >= i + 2) {
      parts.push_back(absl::StrCat(sorted[i], "-", sorted[j]));
    } else {
      for (size_t k = i; k <= j; ++k) parts.push_back(absl::StrCat(sorted[k]));
    }
    i = j + 1;
  }
  return absl::StrJoin(parts, ",");
}

std::string PriorityList(const google::protobuf::RepeatedField<uint32_t>& prios) {
  if (prios.empty()) return "none";
  return Ranges({prios.begin(), prios.end()});
}

// The DSCP app table grouped by priority: "24-25,27-31->3 26->5".
std::string DscpGroups(const roced::v1::DscpMapValue& map) {
  std::map<uint32_t, std::vector<uint32_t>> by_prio;
  for (const auto& [dscp, prio] : map.dscp_to_priority()) by_prio[prio].push_back(dscp);
  if (by_prio.empty()) return "none";
  std::vector<std::string> groups;
  for (auto& [prio, dscps] : by_prio) {
    std::sort(dscps.begin(), dscps.end());
    groups.push_back(absl::StrCat(Ranges(dscps), "->", prio));
  }
  return absl::StrJoin(groups, " ");
}

std::string KernelTsaName(uint32_t tsa) {
  switch (tsa) {
    case 0: return "strict";
    case 1: return "cbs";
    case 2: return "ets";
    case 255: return "vendor";
    default: return absl::StrCat("tsa ", tsa);
  }
}

// "prio->tc 0 0 0 1 0 0 0 0; tc0-1 ets 50%, tc2-7 strict": neighbouring
// classes alike are one range; a bandwidth only where the class is ETS.
std::string EtsText(const roced::v1::EtsValue& e) {
  std::vector<std::string> classes;
  const int n = std::min(e.tsa_size(), e.tc_bandwidth_size());
  for (int i = 0; i < n;) {
    auto text = [&](int k) {
      return e.tsa(k) == 2 ? absl::StrCat("ets ", e.tc_bandwidth(k), "%") : KernelTsaName(e.tsa(k));
    };
    int j = i;
    while (j + 1 < n && text(j + 1) == text(i)) ++j;
    classes.push_back(absl::StrCat("tc", i, j == i ? "" : absl::StrCat("-", j), " ", text(i)));
    i = j + 1;
  }
  return absl::StrCat("prio->tc ", absl::StrJoin(e.priority_to_tc(), " "), "; ", absl::StrJoin(classes, ", "));
}

// "prio->buf 0 0 0 1 0 0 0 0; bytes 130944 130944 of 1048576": the sizes
// up to the last buffer that has one.
std::string BufferText(const roced::v1::InterfaceQos& q) {
  std::vector<uint32_t> sizes(q.buffers().size_bytes().begin(), q.buffers().size_bytes().end());
  while (sizes.size() > 1 && sizes.back() == 0) sizes.pop_back();
  return absl::StrCat("prio->buf ", absl::StrJoin(q.buffers().priority_to_buffer(), " "), "; bytes ",
                      absl::StrJoin(sizes, " "),
                      q.has_buffer_total_bytes() ? absl::StrCat(" of ", q.buffer_total_bytes()) : "");
}

std::string PreventionMs(uint32_t ms) {
  if (ms == 0) return "off";
  if (ms == 0xffff) return "auto";
  return absl::StrCat(ms, " ms");
}

std::string RoceText(const roced::v1::InterfaceQos& q) {
  std::vector<std::string> parts;
  if (q.roce_mode() == roced::v1::ROCE_MODE_V2) parts.push_back("v2");
  if (q.roce_mode() == roced::v1::ROCE_MODE_V1) parts.push_back("v1");
  if (q.has_roce_tos()) {
    parts.push_back(absl::StrCat("tos ", q.roce_tos(), " (dscp ", q.roce_tos() >> 2, ", ecn ", q.roce_tos() & 3, ")"));
  }
  return absl::StrJoin(parts, ", ");
}

// One line of a port's block: what it shows (nullopt: not read), which
// config paths make it managed, and the name it goes by in the "not read"
// line.
struct QosLine {
  const char* key;
  std::optional<std::string> value;
  std::function<bool(absl::string_view path)> manages;
  std::string unread_as;
};

std::function<bool(absl::string_view)> Is(absl::string_view want) {
  return [want](absl::string_view path) { return path == want; };
}

std::function<bool(absl::string_view)> Under(absl::string_view prefix) {
  return [prefix](absl::string_view path) { return absl::StartsWith(path, prefix); };
}

// The CNP's own parameters, which have their line (the others are counted).
bool IsCnpParameter(absl::string_view name) { return name == "cnp_dscp" || name == "cnp_802p_prio"; }

bool Managed(const roced::v1::InterfaceQos& q, const QosLine& line) {
  for (const std::string& m : q.managed()) {
    if (line.manages(m)) return true;
  }
  return false;
}

std::optional<std::string> If(bool read, std::string text) { return read ? std::optional(std::move(text)) : std::nullopt; }

std::string EcnText(const roced::v1::InterfaceQos& q) {
  std::vector<std::string> parts;
  if (q.has_ecn_np()) parts.push_back(absl::StrCat("np ", PriorityList(q.ecn_np().priorities())));
  if (q.has_ecn_rp()) parts.push_back(absl::StrCat("rp ", PriorityList(q.ecn_rp().priorities())));
  return absl::StrJoin(parts, ", ");
}

std::string CnpText(const roced::v1::InterfaceQos& q) {
  std::vector<std::string> parts;
  if (auto it = q.dcqcn().find("cnp_dscp"); it != q.dcqcn().end()) parts.push_back(absl::StrCat("dscp ", it->second));
  if (auto it = q.dcqcn().find("cnp_802p_prio"); it != q.dcqcn().end()) {
    parts.push_back(absl::StrCat("prio ", it->second));
  }
  return absl::StrJoin(parts, ", ");
}

size_t OtherDcqcnParameters(const roced::v1::InterfaceQos& q) {
  size_t n = 0;
  for (const auto& [name, value] : q.dcqcn()) n += IsCnpParameter(name) ? 0 : 1;
  return n;
}

std::vector<QosLine> QosLines(const roced::v1::InterfaceQos& q) {
  // One DCB read gives the app table and whatever else the driver reports:
  // a netdev without DCB is one "dcb" in the "not read" line.
  const bool dcb = q.trust() != roced::v1::TRUST_UNSPECIFIED;
  auto dcb_part = [dcb](const char* key) { return std::string(dcb ? key : "dcb"); };
  // The CNP and rate parameters come from one directory, said once when absent.
  auto dcqcn_part = [&q](const char* key) { return std::string(q.dcqcn().empty() ? "dcqcn" : key); };
  const roced::v1::ObservedPfc& pfc = q.pfc();
  const std::string pfc_text = absl::StrCat(PriorityList(pfc.priorities()), "  (delay ", pfc.delay(),
                                            pfc.capability() != 0 ? absl::StrCat(", cap ", pfc.capability()) : "", ")");
  const std::string dcbx_text = absl::StrCat(q.dcbx_host() ? "host" : "firmware", q.ets_willing() ? ", willing" : "");
  const size_t others = OtherDcqcnParameters(q);
  const std::string dcqcn_text =
      absl::StrCat(others, others == 1 ? " other parameter" : " other parameters", " (-o yaml lists them)");
  auto cnp_path = [](absl::string_view path) {
    return absl::ConsumePrefix(&path, "qos.dcqcn.") && IsCnpParameter(path);
  };
  auto other_dcqcn_path = [](absl::string_view path) {
    return absl::ConsumePrefix(&path, "qos.dcqcn.") && !IsCnpParameter(path);
  };
  return {
      {"mtu", If(q.has_mtu(), absl::StrCat(q.mtu())), Is("mtu"), "mtu"},
      {"dcbx", If(q.has_dcbx_host(), dcbx_text), Is("qos.dcbx_mode"), dcb_part("dcbx")},
      // Trust follows the DSCP table, so the config's trust manages both.
      {"trust", If(dcb, q.trust() == roced::v1::TRUST_DSCP ? "dscp" : "pcp"), Is("qos.dscp_to_priority"), "dcb"},
      {"dscp->prio", If(q.has_dscp(), DscpGroups(q.dscp())), Is("qos.dscp_to_priority"), "dcb"},
      {"pfc", If(q.has_pfc(), pfc_text), Is("qos.pfc"), dcb_part("pfc")},
      {"ets", If(q.has_ets(), EtsText(q.ets())), Is("qos.ets"), dcb_part("ets")},
      {"buffers", If(q.has_buffers(), BufferText(q)), Is("qos.buffers"), dcb_part("buffers")},
      {"pfc storm", If(q.has_pfc_prevention_ms(), PreventionMs(q.pfc_prevention_ms())), Is("qos.pfc_prevention"),
       "pfc storm"},
      {"ecn", If(q.has_ecn_np() || q.has_ecn_rp(), EcnText(q)), Under("qos.ecn."), "ecn"},
      {"cnp", If(!CnpText(q).empty(), CnpText(q)), cnp_path, dcqcn_part("cnp")},
      {"dcqcn", If(others > 0, dcqcn_text), other_dcqcn_path, dcqcn_part("dcqcn")},
      {"roce", If(q.roce_mode() != roced::v1::ROCE_MODE_UNSPECIFIED || q.has_roce_tos(), RoceText(q)), Under("roce."),
       "roce"},
  };
}

// `value` after a 16-column indent, wrapped at spaces within 80 columns.
std::string Wrapped(const std::string& head, const std::string& value) {
  constexpr size_t kWidth = 80;
  std::string out = head;
  size_t col = head.size();
  bool first = true;
  for (absl::string_view word : absl::StrSplit(value, ' ')) {
    if (!first && col + 1 + word.size() > kWidth) {
      absl::StrAppend(&out, "\n", std::string(head.size(), ' '));
      col = head.size();
      first = true;
    }
    if (!first) {
      out.push_back(' ');
      ++col;
    }
    absl::StrAppend(&out, word);
    col += word.size();
    first = false;
  }
  return out + "\n";
}

// The port's driver, the fields it gives roced no control of, and the
// agent in the NIC that owns DCB, with the operator's fix.
std::string DriverLines(const roced::v1::DriverCapability& d) {
  if (d.name().empty()) return "";
  std::string out = Wrapped(absl::StrFormat("    %-11s ", "driver"),
                            absl::StrCat(d.name(), " ", d.version(),
                                         d.firmware_version().empty() ? "" : absl::StrCat(", fw ", d.firmware_version()),
                                         " (profile ", d.profile(), ")"));
  std::vector<std::string> none;
  for (const auto& f : d.fields()) {
    if (!f.manageable()) none.push_back(f.field());
  }
  if (!none.empty()) {
    out += Wrapped(absl::StrFormat("    %-11s ", "no control"),
                   absl::StrCat(absl::StrJoin(none, ", "), " (-o yaml says why)"));
  }
  if (!d.firmware_agent().empty()) {
    out += Wrapped(absl::StrFormat("    %-11s ", "dcb owner"),
                   absl::StrCat(d.firmware_agent(), "; to give DCB to the host: ", d.firmware_agent_fix()));
  }
  return out;
}

// "ens1f0 (mlx5_0 port 1)", then a line per value read or managed, and
// one naming what was not read.
std::string QosBlock(const roced::v1::InterfaceQos& q) {
  std::string out = absl::StrCat(q.netdev(), " (", q.rdma_device(), " port ", q.port(), ")\n");
  out += DriverLines(q.driver());
  std::vector<std::string> not_read;
  for (const QosLine& line : QosLines(q)) {
    const bool managed = Managed(q, line);
    if (line.value || managed) {
      out += Wrapped(absl::StrFormat("  %s %-11s ", managed ? "*" : " ", line.key), line.value.value_or("(not read)"));
    } else if (std::find(not_read.begin(), not_read.end(), line.unread_as) == not_read.end()) {
      not_read.push_back(line.unread_as);
    }
  }
  if (!not_read.empty()) out += Wrapped(absl::StrFormat("    %-11s ", "not read"), absl::StrJoin(not_read, ", "));
  return out;
}

// Every RoCE port's QoS, managed or not (empty before the first pass).
std::string QosSection(const roced::v1::NodeState& state) {
  if (state.interface_qos().empty()) return "";
  std::string out = "\nQoS as read from the node (* the config manages it; the rest is observed only):\n";
  for (const auto& q : state.interface_qos()) out += QosBlock(q);
  return out;
}

}  // namespace

std::string StatusTable(const roced::v1::NodeState& state) {
  std::string out = StatusHeader(state);
  if (state.devices().empty()) {
    absl::StrAppend(&out, "No RDMA devices found.\n");
    return out;
  }
  Table devices({"DEVICE", "DRIVER", "FW", "PCI", "NUMA", "PCIE", "VERBS"});
  Table ports({"DEVICE", "PORT", "STATE", "PHYS", "NETDEV", "LINK", "RATE", "MTU(IB/NET)",
               "ROCEV2 GIDS"});
  Table gids({"DEVICE", "PORT", "INDEX", "TYPE", "NETDEV", "ADDRESS", "GID"});
  std::vector<std::string> warnings(state.agent().warnings().begin(), state.agent().warnings().end());
  for (const auto& d : state.devices()) {
    std::string pcie = PcieText(d, &warnings);
    devices.Row({d.name(), d.driver().empty() ? "-" : d.driver(),
                 d.fw_version().empty() ? "-" : d.fw_version(),
                 d.pci_address().empty() ? "-" : d.pci_address(),
                 d.numa_node() < 0 ? "-" : absl::StrCat(d.numa_node()), pcie,
                 d.verbs_open() ? "open" : "-"});
    PortRows(d, &ports, &gids, &warnings);
  }
  absl::StrAppend(&out, devices.Render(), "\n", ports.Render(), "\n", gids.Render());
  absl::StrAppend(&out, SwitchesSection(state));
  absl::StrAppend(&out, QosSection(state));
  absl::StrAppend(&out, FieldsSection(state, &warnings));
  if (!warnings.empty()) {
    absl::StrAppend(&out, "\nWarnings:\n");
    for (const auto& w : warnings) absl::StrAppend(&out, "  ! ", w, "\n");
  }
  return out;
}

}  // namespace roced::ctl
