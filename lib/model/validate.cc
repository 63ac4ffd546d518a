#include "model/validate.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "google/protobuf/descriptor.h"
#include "model/config_limits.h"
#include "model/dcqcn_params.h"
#include "model/defaults.h"
#include "model/probe_limits.h"
#include "util/escape.h"
#include "util/fs.h"
#include "util/ip_subnet.h"
#include "util/proto_time.h"

namespace roced::model {

namespace pl = probe_limits;
namespace cl = config_limits;
namespace {

using roced::v1::Severity;
using roced::v1::ValidationIssue;

using util::FromProto;
absl::Duration ToDuration(const google::protobuf::Duration& d) { return FromProto(d); }

class Checker {
 public:
  Checker(const SourceMap* positions, std::vector<ValidationIssue>* issues)
      : positions_(positions), issues_(issues) {}

  void Add(Severity severity, const std::string& path, const std::string& message) {
    if (reported_ >= cl::kMaxIssues) {
      ++unlisted_;
      unlisted_error_ |= severity == roced::v1::SEVERITY_ERROR;
      return;
    }
    ++reported_;
    ValidationIssue issue;
    issue.set_path(path);
    issue.set_message(message);
    issue.set_severity(severity);
    if (positions_ != nullptr) {
      // Point at the most specific node we know: the path itself, else its
      // closest ancestor; a missing top-level field points at the document.
      std::string p = path;
      while (true) {
        auto it = positions_->find(p.empty() ? "." : p);
        if (it != positions_->end()) {
          issue.set_line(it->second.line);
          issue.set_column(it->second.column);
          break;
        }
        if (p.empty()) break;
        size_t cut = p.find_last_of(".[");
        p = cut == std::string::npos ? "" : p.substr(0, cut);
      }
    }
    issues_->push_back(std::move(issue));
  }
  void Error(const std::string& path, const std::string& message) {
    Add(roced::v1::SEVERITY_ERROR, path, message);
  }
  void Warn(const std::string& path, const std::string& message) {
    Add(roced::v1::SEVERITY_WARNING, path, message);
  }
  // After the last check: one issue saying how many were not listed.
  void Finish() {
    if (unlisted_ == 0) return;
    ValidationIssue issue;
    issue.set_message(absl::StrCat(unlisted_, " more issue(s) not listed (at most ", cl::kMaxIssues,
                                   " are reported)"));
    issue.set_severity(unlisted_error_ ? roced::v1::SEVERITY_ERROR : roced::v1::SEVERITY_WARNING);
    issues_->push_back(std::move(issue));
    unlisted_ = 0;
  }

  // A repeated field or map of `n` entries, at most `max`. Checked before
  // any entry is looked at.
  bool Count(const std::string& path, size_t n, size_t max, const std::string& why) {
    if (n <= max) return true;
    Error(path, absl::StrCat("has ", n, " entries; allowed at most ", max, " (", why, ")"));
    return false;
  }

  // A string of at most `max` bytes.
  bool Length(const std::string& path, const std::string& s, size_t max, const std::string& what) {
    if (s.size() <= max) return true;
    Error(path, absl::StrCat(what, " is ", s.size(), " bytes long; allowed 1-", max));
    return false;
  }

  // An enum field: proto3 enums are open, so a gRPC caller can send any
  // number; only the declared values (and 0, unset, when `zero_ok`) pass.
  bool Enum(const std::string& path, const google::protobuf::EnumDescriptor* e, int value,
            bool zero_ok) {
    if ((value == 0 && zero_ok) || (value != 0 && e->FindValueByNumber(value) != nullptr)) return true;
    std::vector<std::string> allowed;
    for (int i = 0; i < e->value_count(); ++i) {
      if (e->value(i)->number() != 0) allowed.push_back(EnumValueYamlName(e->value(i)));
    }
    Error(path, absl::StrCat(value == 0 ? "is required" : absl::StrCat("unknown value ", value),
                             "; allowed: ", absl::StrJoin(allowed, ", "), zero_ok ? " (or unset)" : ""));
    return false;
  }

  bool NormalizedDuration(const std::string& path, const google::protobuf::Duration& d) {
    std::optional<std::string> problem = DurationProblem(d);
    if (problem) Error(path, *problem);
    return !problem;
  }

  // Checks lo <= v <= hi; the message names the value and the range.
  bool Range(const std::string& path, uint64_t v, uint64_t lo, uint64_t hi,
             const std::string& what = "") {
    if (v >= lo && v <= hi) return true;
    Error(path, absl::StrCat(what.empty() ? "value" : what, " ", v, " is out of range; allowed ",
                             lo, "-", hi));
    return false;
  }

  void DurationRange(const std::string& path, const google::protobuf::Duration& d,
                     absl::Duration lo, absl::Duration hi) {
    if (!NormalizedDuration(path, d)) return;
    absl::Duration v = ToDuration(d);
    if (v < lo || v > hi) {
      Error(path, absl::StrCat("duration ", absl::FormatDuration(v), " is out of range; allowed ",
                               absl::FormatDuration(lo), " to ", absl::FormatDuration(hi)));
    }
  }

  // A list of distinct priorities 0-7.
  std::set<uint32_t> Priorities(const std::string& path,
                                const google::protobuf::RepeatedField<uint32_t>& list) {
    std::set<uint32_t> seen;
    for (int i = 0; i < list.size(); ++i) {
      std::string p = absl::StrCat(path, "[", i, "]");
      if (!Range(p, list[i], 0, config_limits::kMaxPriority, "priority")) continue;
      if (!seen.insert(list[i]).second) Error(p, absl::StrCat("priority ", list[i], " listed twice"));
    }
    return seen;
  }

 private:
  const SourceMap* positions_;
  std::vector<ValidationIssue>* issues_;
  size_t reported_ = 0;
  size_t unlisted_ = 0;
  bool unlisted_error_ = false;
};

bool IsPciAddress(const std::string& s) {
  // dddd:bb:dd.f, hex digits.
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (!absl::ascii_isxdigit(s[i])) return false;
  }
  return true;
}

// What one entry of an eight-entry qos list stands for.
std::string ListEntryName(const std::string& list) {
  if (list == ".ets.priority_to_tc" || list == ".buffers.priority_to_buffer") return "priority";
  if (list == ".buffers.size_bytes") return "buffer";
  return "traffic class";
}

// The count caps of one interface's qos, read off the sizes alone.
bool CheckQosBounds(Checker& c, const std::string& path, const roced::v1::QosConfig& qos) {
  bool ok = c.Count(path + ".dscp_to_priority", qos.dscp_to_priority_size(), cl::kMaxDscpEntries,
                    absl::StrCat("one per DSCP value 0-", cl::kMaxDscp));
  const std::string kPrios = absl::StrCat("priorities 0-", cl::kMaxPriority, ", each once");
  ok &= c.Count(path + ".pfc.priorities", qos.pfc().priorities_size(), cl::kMaxPriorities, kPrios);
  ok &= c.Count(path + ".ecn.np_priorities", qos.ecn().np_priorities_size(), cl::kMaxPriorities, kPrios);
  ok &= c.Count(path + ".ecn.rp_priorities", qos.ecn().rp_priorities_size(), cl::kMaxPriorities, kPrios);
  const auto& ets = qos.ets();
  const std::pair<const char*, int> lists[] = {{".ets.priority_to_tc", ets.priority_to_tc_size()},
                                               {".ets.tc_bandwidth", ets.tc_bandwidth_size()},
                                               {".ets.tsa", ets.tsa_size()},
                                               {".buffers.priority_to_buffer", qos.buffers().priority_to_buffer_size()},
                                               {".buffers.size_bytes", qos.buffers().size_bytes_size()}};
  for (const auto& [name, n] : lists) {
    if (n > cl::kEtsEntries) {
      c.Error(path + name, absl::StrCat("needs exactly ", cl::kEtsEntries, " entries (one per ", ListEntryName(name),
                                        " 0-7), found ", n));
      ok = false;
    }
  }
  return ok;
}

// Every count cap of the config, read off the sizes of its repeated fields
// and maps: no entry is looked at beyond the interfaces' qos sizes (and
// those only when the interfaces are within their cap). False when any cap
// is exceeded.
bool CheckBounds(Checker& c, const roced::v1::NodeConfig& config) {
  bool ok = c.Count("interfaces", config.interfaces_size(), cl::kMaxInterfaces, "RoCE ports of one node");
  if (ok) {
    for (int i = 0; i < config.interfaces_size(); ++i) {
      ok &= CheckQosBounds(c, absl::StrCat("interfaces[", i, "].qos"), config.interfaces(i).qos());
    }
  }
  ok &= c.Count("hugepages", config.hugepages_size(), cl::kMaxHugepages,
                "one pool per page size, node-wide and per NUMA node");
  ok &= c.Count("probes.peers", config.probes().peers_size(), pl::kMaxPeers, "peers probed from one node");
  return ok;
}

void ValidateEts(Checker& c, const std::string& ep, const roced::v1::EtsConfig& ets) {
  if (ets.priority_to_tc_size() != 8) {
    c.Error(ep + ".priority_to_tc",
            absl::StrCat("needs exactly 8 entries (one per priority 0-7), found ",
                         ets.priority_to_tc_size()));
  }
  if (ets.tc_bandwidth_size() != 8) {
    c.Error(ep + ".tc_bandwidth",
            absl::StrCat("needs exactly 8 entries (one per traffic class 0-7), found ",
                         ets.tc_bandwidth_size()));
  }
  if (ets.tsa_size() != 8) {
    c.Error(ep + ".tsa", absl::StrCat("needs exactly 8 entries (one per traffic class 0-7), found ",
                                      ets.tsa_size()));
  }
  for (int i = 0; i < ets.priority_to_tc_size(); ++i) {
    c.Range(absl::StrCat(ep, ".priority_to_tc[", i, "]"), ets.priority_to_tc(i), 0, cl::kMaxPriority,
            "traffic class");
  }
  uint64_t sum = 0;
  bool any_ets = false;
  for (int i = 0; i < ets.tc_bandwidth_size(); ++i) {
    std::string p = absl::StrCat(ep, ".tc_bandwidth[", i, "]");
    c.Range(p, ets.tc_bandwidth(i), 0, cl::kEtsBandwidthTotal, "bandwidth percent");
    bool is_ets = i < ets.tsa_size() && ets.tsa(i) == roced::v1::TSA_ETS;
    if (is_ets) {
      sum += ets.tc_bandwidth(i);
      any_ets = true;
    } else if (ets.tc_bandwidth(i) != 0 && i < ets.tsa_size()) {
      c.Error(p, absl::StrCat("traffic class ", i,
                              " is not ets but has bandwidth ", ets.tc_bandwidth(i),
                              "; only ets classes take a share (use 0)"));
    }
  }
  if (ets.tsa_size() == 8 && ets.tc_bandwidth_size() == 8 && any_ets && sum != cl::kEtsBandwidthTotal) {
    c.Error(ep + ".tc_bandwidth",
            absl::StrCat("bandwidths of ets traffic classes sum to ", sum, "; they must sum to ", cl::kEtsBandwidthTotal));
  }
  for (int i = 0; i < ets.tsa_size(); ++i) {
    if (ets.tsa(i) == roced::v1::TSA_UNSPECIFIED) {
      c.Error(absl::StrCat(ep, ".tsa[", i, "]"), "must be one of: strict, ets, vendor");
    } else {
      c.Enum(absl::StrCat(ep, ".tsa[", i, "]"), roced::v1::Tsa_descriptor(), ets.tsa(i), false);
    }
  }
}

// qos.buffers: either list, or both; eight entries each. `pfc_prios`: the
// priorities the config's qos.pfc enables (none without one).
void ValidateBuffers(Checker& c, const std::string& bp, const roced::v1::BufferConfig& b,
                     const std::set<uint32_t>& pfc_prios) {
  if (b.priority_to_buffer_size() == 0 && b.size_bytes_size() == 0) {
    c.Error(bp, "needs priority_to_buffer (8 entries), size_bytes (8 entries) or both");
    return;
  }
  if (b.priority_to_buffer_size() != 0 && b.priority_to_buffer_size() != 8) {
    c.Error(bp + ".priority_to_buffer", absl::StrCat("needs exactly 8 entries (one per priority 0-7), found ",
                                                     b.priority_to_buffer_size()));
  }
  if (b.size_bytes_size() != 0 && b.size_bytes_size() != 8) {
    c.Error(bp + ".size_bytes",
            absl::StrCat("needs exactly 8 entries (one per buffer 0-7), found ", b.size_bytes_size()));
  }
  for (int i = 0; i < b.priority_to_buffer_size(); ++i) {
    c.Range(absl::StrCat(bp, ".priority_to_buffer[", i, "]"), b.priority_to_buffer(i), 0, cl::kMaxPriority, "buffer");
  }
  uint64_t sum = 0;
  for (uint32_t size : b.size_bytes()) sum += size;
  // The kernel's total_size is a u32; the port's own total is checked
  // against the node when the buffers are written.
  if (sum > UINT32_MAX) {
    c.Error(bp + ".size_bytes", absl::StrCat("sizes sum to ", sum, " bytes; allowed at most ", UINT32_MAX,
                                             " (and at most the port's total buffer)"));
  }
  if (b.priority_to_buffer_size() != 8 || b.size_bytes_size() != 8) return;
  for (int i = 0; i < 8; ++i) {
    const uint32_t buf = b.priority_to_buffer(i);
    if (buf >= 8 || b.size_bytes(static_cast<int>(buf)) != 0) continue;
    const std::string p = absl::StrCat(bp, ".priority_to_buffer[", i, "]");
    const std::string what = absl::StrCat("priority ", i, " is mapped to buffer ", buf, ", whose size_bytes is 0");
    // A lossless buffer (a PFC priority maps to it) of 0 bytes is always
    // refused: mlx5 needs xoff + MTU + one cell (en/port_buffer.c,
    // update_xoff_threshold); the agent checks that minimum against the
    // node before it writes.
    if (pfc_prios.count(static_cast<uint32_t>(i)) != 0) {
      c.Error(p, absl::StrCat(what, ", but PFC is enabled on it: a lossless buffer needs room for the pause "
                              "headroom (mlx5: xoff + MTU + one cell)"));
    } else {
      c.Warn(p, what);
    }
  }
}

void ValidatePfcPrevention(Checker& c, const std::string& pp, const roced::v1::PfcPreventionConfig& p) {
  switch (p.timeout_case()) {
    case roced::v1::PfcPreventionConfig::kTimeoutMs:
      if (!c.Range(pp + ".timeout_ms", p.timeout_ms(), 0, kPfcPreventionMaxMs, "timeout")) return;
      if (p.timeout_ms() != 0 &&
          (p.timeout_ms() < kMlx5PfcPreventionMinMs || p.timeout_ms() > kMlx5PfcPreventionMaxMs)) {
        c.Warn(pp + ".timeout_ms", absl::StrCat("timeout ", p.timeout_ms(), " ms: mlx5 accepts ",
                                                kMlx5PfcPreventionMinMs, "-", kMlx5PfcPreventionMaxMs,
                                                " (or 0 to disable) and refuses others"));
      }
      return;
    case roced::v1::PfcPreventionConfig::kAuto:
      if (!p.auto_()) c.Error(pp + ".auto", "auto: false says nothing; give timeout_ms (0 disables) instead");
      return;
    default:
      c.Error(pp, absl::StrCat("needs timeout_ms (0-", kPfcPreventionMaxMs, ", 0 disables) or auto: true"));
  }
}

// qos.dcqcn: each parameter present against its range (model/dcqcn_params.h).
void ValidateDcqcn(Checker& c, const std::string& dp, const roced::v1::DcqcnConfig& d) {
  const google::protobuf::Descriptor* desc = d.GetDescriptor();
  const google::protobuf::Reflection* refl = d.GetReflection();
  for (const DcqcnParam& param : kDcqcnParams) {
    const google::protobuf::FieldDescriptor* f = desc->FindFieldByName(param.name);
    if (f == nullptr || !refl->HasField(d, f)) continue;
    c.Range(absl::StrCat(dp, ".", param.name), refl->GetUInt32(d, f), param.min, param.max, param.name);
  }
}

void ValidateQos(Checker& c, const std::string& path, const roced::v1::QosConfig& qos) {
  c.Enum(path + ".trust", roced::v1::Trust_descriptor(), qos.trust(), true);
  c.Enum(path + ".dcbx_mode", roced::v1::DcbxMode_descriptor(), qos.dcbx_mode(), true);
  std::set<uint32_t> mapped_prios;
  for (const auto& [dscp, prio] : qos.dscp_to_priority()) {
    std::string p = absl::StrCat(path, ".dscp_to_priority[", dscp, "]");
    c.Range(p, dscp, 0, cl::kMaxDscp, "DSCP");
    if (c.Range(p, prio, 0, cl::kMaxPriority, "priority")) mapped_prios.insert(prio);
  }
  if (qos.trust() == roced::v1::TRUST_PCP && qos.dscp_to_priority_size() > 0) {
    c.Warn(path + ".dscp_to_priority",
           "DSCP entries are given but trust is pcp; on mlx5 installing DSCP entries switches the "
           "port to DSCP trust");
  }
  std::set<uint32_t> pfc_prios;
  if (qos.has_pfc()) {
    pfc_prios = c.Priorities(path + ".pfc.priorities", qos.pfc().priorities());
    if (qos.pfc().has_delay() &&
        c.Range(path + ".pfc.delay", qos.pfc().delay(), 0, cl::kMaxPfcDelay, "delay") &&
        (qos.pfc().delay() == 0 || qos.pfc().delay() >= 1000)) {
      // mlx5e_dcbnl_ieee_setpfc takes the delay as the cable length in
      // metres only when it is 1-999 (MLX5E_MAX_CABLE_LENGTH).
      c.Warn(path + ".pfc.delay", absl::StrCat("mlx5 keeps its cable length (7 m at load) for a delay of ",
                                               qos.pfc().delay(), ": it takes 1-999 m"));
    }
    if (qos.trust() == roced::v1::TRUST_DSCP) {
      for (uint32_t prio : pfc_prios) {
        if (!mapped_prios.count(prio)) {
          c.Warn(path + ".pfc.priorities",
                 absl::StrCat("PFC is enabled on priority ", prio,
                              " but no DSCP maps to it under trust dscp: lossless traffic will "
                              "not land on the paused priority"));
        }
      }
    }
  }
  if (qos.has_ets()) ValidateEts(c, path + ".ets", qos.ets());
  if (qos.has_buffers()) ValidateBuffers(c, path + ".buffers", qos.buffers(), pfc_prios);
  if (qos.has_pfc_prevention()) ValidatePfcPrevention(c, path + ".pfc_prevention", qos.pfc_prevention());
  if (qos.has_dcqcn()) ValidateDcqcn(c, path + ".dcqcn", qos.dcqcn());
  if (qos.has_ecn()) {
    std::set<uint32_t> np = c.Priorities(path + ".ecn.np_priorities", qos.ecn().np_priorities());
    c.Priorities(path + ".ecn.rp_priorities", qos.ecn().rp_priorities());
    if (qos.has_pfc()) {
      for (uint32_t prio : pfc_prios) {
        if (!np.count(prio)) {
          c.Warn(path + ".ecn.np_priorities",
                 absl::StrCat("lossless priority ", prio,
                              " has no ECN notification point: congestion will be handled by "
                              "PFC alone (pause storms)"));
        }
      }
    }
  }
}

// One interfaces[] entry; `match_keys` collects the interfaces named so far.
void ValidateInterface(Checker& c, const std::string& path, const roced::v1::InterfaceConfig& iface,
                       std::set<std::string>* match_keys) {
  std::string key;
  switch (iface.match().key_case()) {
    case roced::v1::InterfaceMatch::kNetdev:
      key = "netdev=" + iface.match().netdev();
      if (iface.match().netdev().empty() || iface.match().netdev().size() > cl::kMaxNetdevNameLength) {
        c.Error(path + ".match.netdev",
                absl::StrCat("must be an interface name of 1-", cl::kMaxNetdevNameLength, " characters"));
      }
      break;
    case roced::v1::InterfaceMatch::kRdmaDevice:
      key = "rdma_device=" + iface.match().rdma_device();
      if (iface.match().rdma_device().empty() || iface.match().rdma_device().size() > cl::kMaxRdmaDeviceNameLength) {
        c.Error(path + ".match.rdma_device",
                absl::StrCat("must be an RDMA device name of 1-", cl::kMaxRdmaDeviceNameLength, " characters"));
      }
      break;
    case roced::v1::InterfaceMatch::kPci:
      key = "pci=" + absl::AsciiStrToLower(iface.match().pci());
      if (!IsPciAddress(iface.match().pci())) {
        c.Error(path + ".match.pci",
                absl::StrCat(util::Quoted(iface.match().pci()),
                             " is not a PCI address; expected domain:bus:device.function "
                             "such as 0000:3b:00.0"));
      }
      break;
    case roced::v1::InterfaceMatch::KEY_NOT_SET:
      c.Error(path + ".match", "is required: one of netdev, rdma_device or pci");
      break;
  }
  if (!key.empty() && !match_keys->insert(key).second) {
    c.Error(path + ".match", absl::StrCat("interface ", util::EscapeForLog(key, 80), " is configured twice"));
  }
  if (iface.has_mtu()) c.Range(path + ".mtu", iface.mtu(), kMinMtu, kMaxMtu, "MTU");
  if (iface.has_qos()) ValidateQos(c, path + ".qos", iface.qos());
  if (iface.has_roce()) {
    c.Enum(path + ".roce.default_mode", roced::v1::RoceMode_descriptor(), iface.roce().default_mode(), true);
    if (iface.roce().has_default_tos()) {
      c.Range(path + ".roce.default_tos", iface.roce().default_tos(), 0, cl::kMaxTos, "ToS");
      const auto& qos = iface.qos();
      uint32_t dscp = iface.roce().default_tos() >> 2;
      if (iface.has_qos() && qos.trust() == roced::v1::TRUST_DSCP &&
          qos.dscp_to_priority_size() > 0 && iface.roce().default_tos() <= cl::kMaxTos &&
          !qos.dscp_to_priority().contains(dscp)) {
        c.Warn(path + ".roce.default_tos",
               absl::StrCat("ToS ", iface.roce().default_tos(), " carries DSCP ", dscp,
                            ", which dscp_to_priority does not map: RoCE traffic lands on "
                            "priority 0"));
      }
    }
  }
}

void ValidateHugepages(Checker& c, const roced::v1::NodeConfig& config) {
  std::set<std::pair<uint64_t, int32_t>> pools;
  for (int i = 0; i < config.hugepages_size(); ++i) {
    const auto& hp = config.hugepages(i);
    const std::string path = absl::StrCat("hugepages[", i, "]");
    uint64_t kb = HugepageSizeKb(hp.size());
    if (kb == 0) {
      c.Error(path + ".size", absl::StrCat(util::Quoted(hp.size()), " is not a hugepage size; allowed: 2Mi, 1Gi"));
    }
    c.Range(path + ".count", hp.count(), 0, cl::kMaxHugepageCount, "count");
    int32_t numa = hp.has_numa_node() ? hp.numa_node() : -1;
    if (hp.has_numa_node() && (hp.numa_node() < 0 || hp.numa_node() > cl::kMaxNumaNode)) {
      c.Error(path + ".numa_node",
              absl::StrCat("NUMA node ", hp.numa_node(), " is out of range; allowed 0-", cl::kMaxNumaNode));
    }
    if (kb != 0 && !pools.insert({kb, numa}).second) {
      c.Error(path, absl::StrCat("hugepage pool ", hp.size(),
                                 numa >= 0 ? absl::StrCat(" on NUMA node ", numa) : " (node-wide)",
                                 " is configured twice"));
    }
  }
}

}  // namespace

uint64_t HugepageBytes(const roced::v1::NodeConfig& config) {
  // Page size (kB) -> (node-wide pages, pages over every NUMA node).
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> pools;
  for (const auto& hp : config.hugepages()) {
    const uint64_t kb = HugepageSizeKb(hp.size());
    if (kb == 0) continue;
    auto& pool = pools[kb];
    (hp.has_numa_node() ? pool.second : pool.first) += hp.count();
  }
  uint64_t bytes = 0;
  for (const auto& [kb, pool] : pools) bytes += std::max(pool.first, pool.second) * kb * 1024;
  return bytes;
}

absl::Status CheckHugepagesFitMemory(const roced::v1::NodeConfig& config, uint64_t mem_total_bytes) {
  const uint64_t bytes = HugepageBytes(config);
  const auto limit = static_cast<uint64_t>(kMaxHugepageShareOfMemory * static_cast<double>(mem_total_bytes));
  if (bytes <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "hugepages: the pools reserve ", bytes, " bytes; allowed at most ", limit, " (90% of the node's ",
      mem_total_bytes, " bytes of memory, MemTotal)"));
}

namespace {

bool HasControlCharacter(const std::string& s) {
  for (unsigned char ch : s) {
    if (ch < 0x20 || ch == 0x7f) return true;
  }
  return false;
}

void ValidatePeer(Checker& c, const std::string& path, const roced::v1::ProbePeerConfig& peer,
                  std::set<std::string>* names) {
  if (peer.name().empty()) {
    c.Error(path + ".name", "is required");
  } else if (peer.name().size() > pl::kMaxPeerNameLength) {
    c.Length(path + ".name", peer.name(), pl::kMaxPeerNameLength, "name");
  } else if (HasControlCharacter(peer.name())) {
    c.Error(path + ".name", absl::StrCat("peer ", util::Quoted(peer.name()), " has a control character"));
  } else if (!names->insert(peer.name()).second) {
    c.Error(path + ".name", absl::StrCat("peer ", util::Quoted(peer.name(), pl::kMaxPeerNameLength),
                                         " is listed twice"));
  }
  if (!c.Length(path + ".address", peer.address(), pl::kMaxPeerAddressLength, "address")) return;
  if (!util::IsHostPort(peer.address())) {
    c.Error(path + ".address",
            absl::StrCat(util::Quoted(peer.address()),
                         " is not host:port (port 1-65535; IPv6 in brackets), e.g. 10.0.0.12:", defaults::kGrpcPort));
  }
}

void ValidateProbes(Checker& c, const roced::v1::ProbeConfig& pr) {
  std::set<std::string> names;
  for (int i = 0; i < pr.peers_size(); ++i) {
    ValidatePeer(c, absl::StrCat("probes.peers[", i, "]"), pr.peers(i), &names);
  }
  c.Length("probes.device", pr.device(), pl::kMaxDeviceNameLength, "RDMA device name");
  if (pr.has_max_concurrent()) c.Range("probes.max_concurrent", pr.max_concurrent(), 1, pl::kMaxMaxConcurrent);
  if (pr.has_traffic_class()) c.Range("probes.traffic_class", pr.traffic_class(), 0, pl::kMaxTrafficClass, "ToS");
  if (pr.has_latency()) {
    const auto& l = pr.latency();
    if (l.has_interval()) c.DurationRange("probes.latency.interval", l.interval(), pl::kMinLatencyInterval, pl::kMaxInterval);
    if (l.has_size()) c.Range("probes.latency.size", l.size(), 1, pl::kMaxLatencySize, "size");
    if (l.has_iterations()) c.Range("probes.latency.iterations", l.iterations(), 1, pl::kMaxIterations, "iterations");
  }
  if (pr.has_bandwidth()) {
    const auto& b = pr.bandwidth();
    if (b.has_interval()) c.DurationRange("probes.bandwidth.interval", b.interval(), pl::kMinBandwidthInterval, pl::kMaxInterval);
    if (b.has_duration()) c.DurationRange("probes.bandwidth.duration", b.duration(), pl::kMinDuration, pl::kMaxDuration);
    if (b.has_size()) c.Range("probes.bandwidth.size", b.size(), 1, pl::kMaxSize, "size");
    if (b.has_qps()) c.Range("probes.bandwidth.qps", b.qps(), 1, pl::kMaxQps, "QP count");
    if (b.has_outstanding()) c.Range("probes.bandwidth.outstanding", b.outstanding(), 1, pl::kMaxOutstanding, "outstanding");
  }
}

// reconcile.interval and the PFC watchdog's timings.
// mesh.tor and mesh.pod: names an inventory line can hold (printable
// ASCII, no spaces), when set.
void ValidateMesh(Checker& c, const roced::v1::MeshConfig& mesh) {
  for (const auto& [field, value] : {std::pair<const char*, const std::string*>{"mesh.tor", &mesh.tor()},
                                     {"mesh.pod", &mesh.pod()}}) {
    if (!c.Length(field, *value, cl::kMaxMeshNameLength, "the name")) continue;
    for (size_t i = 0; i < value->size(); ++i) {
      const unsigned char ch = static_cast<unsigned char>((*value)[i]);
      if (ch < 0x21 || ch > 0x7e) {
        c.Error(field, absl::StrCat(util::Quoted(*value), " has byte 0x", absl::Hex(ch, absl::kZeroPad2),
                                    " at offset ", i, "; allowed printable ASCII without spaces (0x21-0x7e)"));
        break;
      }
    }
  }
}

void ValidateTimers(Checker& c, const roced::v1::NodeConfig& config) {
  if (config.has_reconcile() && config.reconcile().has_interval()) {
    c.DurationRange("reconcile.interval", config.reconcile().interval(), cl::kMinReconcileInterval,
                    cl::kMaxReconcileInterval);
  }
  if (config.has_pfc_watchdog()) {
    const auto& w = config.pfc_watchdog();
    if (w.has_poll_interval()) c.DurationRange("pfc_watchdog.poll_interval", w.poll_interval(), cl::kMinWatchdogTime,
                                                  cl::kMaxWatchdogPollInterval);
    if (w.has_detection_time()) c.DurationRange("pfc_watchdog.detection_time", w.detection_time(), cl::kMinWatchdogTime,
                                                   cl::kMaxWatchdogTime);
    if (w.has_restoration_time()) c.DurationRange("pfc_watchdog.restoration_time", w.restoration_time(), cl::kMinWatchdogTime,
                                                     cl::kMaxWatchdogTime);
  }
}

}  // namespace

bool HasErrors(const std::vector<ValidationIssue>& issues) {
  for (const auto& i : issues) {
    if (i.severity() == roced::v1::SEVERITY_ERROR) return true;
  }
  return false;
}

std::optional<std::string> DurationProblem(const google::protobuf::Duration& d) {
  constexpr int64_t kMaxSeconds = 315576000000;
  const bool ok = d.nanos() >= -999999999 && d.nanos() <= 999999999 && !(d.seconds() > 0 && d.nanos() < 0) &&
                  !(d.seconds() < 0 && d.nanos() > 0) && d.seconds() >= -kMaxSeconds && d.seconds() <= kMaxSeconds;
  if (ok) return std::nullopt;
  return absl::StrCat("seconds ", d.seconds(), " and nanos ", d.nanos(),
                      " is not a normalized duration; allowed: nanos -999999999 to 999999999 "
                      "with the sign of seconds, seconds within +-",
                      kMaxSeconds);
}

std::string ErrorSummary(const std::vector<ValidationIssue>& issues) {
  std::vector<std::string> parts;
  for (const auto& i : issues) {
    if (i.severity() != roced::v1::SEVERITY_ERROR) continue;
    parts.push_back(i.path().empty() ? i.message() : absl::StrCat(i.path(), ": ", i.message()));
  }
  return absl::StrJoin(parts, "; ");
}

uint64_t HugepageSizeKb(const std::string& size) {
  if (size == "2Mi" || size == "2048kB" || size == "2M") return 2048;
  if (size == "1Gi" || size == "1048576kB" || size == "1G") return 1048576;
  return 0;
}

void ValidateConfig(const roced::v1::NodeConfig& config, const SourceMap* positions,
                    std::vector<ValidationIssue>* issues) {
  Checker c(positions, issues);
  if (config.api_version() != "roced/v1") {
    c.Error("apiVersion", config.api_version().empty()
                              ? "is required; must be roced/v1"
                              : absl::StrCat(util::Quoted(config.api_version()), " is not supported; must be roced/v1"));
  }
  if (config.kind() != "NodeConfig") {
    c.Error("kind", config.kind().empty()
                        ? "is required; must be NodeConfig"
                        : absl::StrCat(util::Quoted(config.kind()), " is not supported; must be NodeConfig"));
  }
  c.Enum("mode", roced::v1::Mode_descriptor(), config.mode(), true);
  // The caps first: beyond one, no entry is looked at.
  if (!CheckBounds(c, config)) {
    c.Finish();
    return;
  }

  std::set<std::string> match_keys;
  for (int i = 0; i < config.interfaces_size(); ++i) {
    ValidateInterface(c, absl::StrCat("interfaces[", i, "]"), config.interfaces(i), &match_keys);
  }
  ValidateHugepages(c, config);
  if (config.has_probes()) ValidateProbes(c, config.probes());
  ValidateMesh(c, config.mesh());
  ValidateTimers(c, config);
  c.Finish();
}

bool CheckConfigBounds(const roced::v1::NodeConfig& config, std::vector<ValidationIssue>* issues) {
  Checker c(nullptr, issues);
  bool ok = CheckBounds(c, config);
  c.Finish();
  return ok;
}

namespace {
void SetDefaultDuration(google::protobuf::Duration* d, absl::Duration v) {
  if (d->seconds() != 0 || d->nanos() != 0) return;
  int64_t secs = absl::IDivDuration(v, absl::Seconds(1), &v);
  d->set_seconds(secs);
  d->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(v)));
}
}  // namespace

void ApplyDefaults(roced::v1::NodeConfig* config) {
  if (config->mode() == roced::v1::MODE_UNSPECIFIED) config->set_mode(roced::v1::MODE_ENFORCE);
  SetDefaultDuration(config->mutable_reconcile()->mutable_interval(), defaults::kReconcileInterval);
  auto* wd = config->mutable_pfc_watchdog();
  SetDefaultDuration(wd->mutable_poll_interval(), defaults::kWatchdogPollInterval);
  SetDefaultDuration(wd->mutable_detection_time(), defaults::kWatchdogDetectionTime);
  SetDefaultDuration(wd->mutable_restoration_time(), defaults::kWatchdogRestorationTime);
  if (config->has_probes()) {
    auto* pr = config->mutable_probes();
    if (!pr->has_max_concurrent()) pr->set_max_concurrent(pl::kDefaultMaxConcurrent);
    auto* l = pr->mutable_latency();
    SetDefaultDuration(l->mutable_interval(), pl::kDefaultLatencyInterval);
    if (!l->has_size()) l->set_size(pl::kDefaultLatencySize);
    if (!l->has_iterations()) l->set_iterations(pl::kDefaultIterations);
    auto* b = pr->mutable_bandwidth();
    SetDefaultDuration(b->mutable_interval(), pl::kDefaultBandwidthInterval);
    SetDefaultDuration(b->mutable_duration(), pl::kDefaultDuration);
    if (!b->has_size()) b->set_size(pl::kDefaultBandwidthSize);
    if (!b->has_qps()) b->set_qps(pl::kDefaultQps);
    if (!b->has_outstanding()) b->set_outstanding(pl::kDefaultOutstanding);
  }
}

absl::StatusOr<roced::v1::NodeConfig> LoadConfigFile(const std::string& path,
                                                     std::vector<ValidationIssue>* warnings,
                                                     std::string* text_out) {
  // A regular file only (symlinks followed, the target checked), refused
  // over the size cap before it is read; DecodeYamlConfig checks the text it
  // is given too.
  auto text = util::ReadRegularFile(path, config_limits::kMaxConfigBytes, "config file");
  if (!text.ok()) return text.status();
  std::vector<ValidationIssue> issues;
  auto decoded = DecodeYamlConfig(*text, &issues);
  if (decoded.ok()) ValidateConfig(decoded->config, &decoded->positions, &issues);
  std::vector<ValidationIssue> errors;
  for (auto& i : issues) {
    if (i.severity() == roced::v1::SEVERITY_WARNING) {
      if (warnings != nullptr) warnings->push_back(i);
    } else {
      errors.push_back(i);
    }
  }
  if (!errors.empty()) {
    std::string msg = FormatIssues(path, errors);
    if (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return absl::InvalidArgumentError(msg);
  }
  if (text_out != nullptr) *text_out = *std::move(text);
  return std::move(decoded->config);
}

}  // namespace roced::model
