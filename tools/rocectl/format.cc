#include "tools/rocectl/format.h"

#include "model/confirm_policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
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
  absl::StrAppend(&out, FieldsSection(state, &warnings));
  if (!warnings.empty()) {
    absl::StrAppend(&out, "\nWarnings:\n");
    for (const auto& w : warnings) absl::StrAppend(&out, "  ! ", w, "\n");
  }
  return out;
}

}  // namespace roced::ctl
