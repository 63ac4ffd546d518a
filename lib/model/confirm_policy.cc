#include "model/confirm_policy.h"

#include <yaml-cpp/yaml.h>

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "util/proto_time.h"

namespace roced::model {

namespace {

using roced::v1::ConfirmPolicy;
using roced::v1::GateStatus;

absl::Status Invalid(absl::string_view prefix, absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(prefix, ".", field, ": ", what));
}

void SetWindow(absl::Duration d, ConfirmPolicy* p) { *p->mutable_window() = util::ToProto(d); }

// One key of either spelling. `value` is empty for the spec's bare flags.
absl::Status SetKey(absl::string_view key, absl::string_view value, ConfirmPolicy* p) {
  auto number = [&](double* out) -> absl::Status {
    if (!absl::SimpleAtod(value, out)) {
      return absl::InvalidArgumentError(absl::StrCat(key, ": '", value, "' is not a number"));
    }
    return absl::OkStatus();
  };
  auto flag = [&](bool* out) -> absl::Status {
    if (value.empty() || value == "true") {
      *out = true;
    } else if (value == "false") {
      *out = false;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(key, ": '", value, "' is not true or false"));
    }
    return absl::OkStatus();
  };
  if (key == "window") {
    absl::Duration d;
    if (!absl::ParseDuration(value, &d)) {
      return absl::InvalidArgumentError(absl::StrCat("window: '", value, "' is not a duration (e.g. 60s, 5m)"));
    }
    SetWindow(d, p);
    return absl::OkStatus();
  }
  bool b = false;
  double x = 0;
  if (key == "converged") {
    if (absl::Status s = flag(&b); !s.ok()) return s;
    p->set_converged(b);
  } else if (key == "no_pfc_storm" || key == "no-pfc-storm") {
    if (absl::Status s = flag(&b); !s.ok()) return s;
    p->set_no_pfc_storm(b);
  } else if (key == "max_mesh_loss_increase" || key == "mesh-loss") {
    if (absl::Status s = number(&x); !s.ok()) return s;
    p->set_max_mesh_loss_increase(x);
  } else if (key == "max_mesh_p99_ratio" || key == "mesh-p99") {
    if (absl::Status s = number(&x); !s.ok()) return s;
    p->set_max_mesh_p99_ratio(x);
  } else if (key == "probe_peers" || key == "probe") {
    p->add_probe_peers(std::string(value));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown key '", key,
        "' (known: window, converged, no_pfc_storm, max_mesh_loss_increase, max_mesh_p99_ratio, probe_peers; "
        "in a spec: window, converged, no-pfc-storm, mesh-loss, mesh-p99, probe)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ConfirmPolicy> ParseSpec(absl::string_view text) {
  ConfirmPolicy p;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    const bool bare = kv.second.empty() && item.find('=') == absl::string_view::npos;
    if (!bare && kv.second.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("confirm policy: '", item, "' has no value after '='"));
    }
    if (absl::Status s = SetKey(kv.first, kv.second, &p); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("confirm policy: ", s.message()));
    }
  }
  return p;
}

std::string At(const YAML::Node& n) {
  return absl::StrCat("line ", n.Mark().line + 1, ", column ", n.Mark().column + 1, ": ");
}

absl::StatusOr<ConfirmPolicy> ParseYaml(absl::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("confirm policy: line ", e.mark.line + 1, ", column ",
                                                   e.mark.column + 1, ": ", e.msg));
  }
  if (!root.IsMap()) return absl::InvalidArgumentError("confirm policy: expected a YAML mapping of its keys");
  ConfirmPolicy p;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    absl::Status s;
    if (key == "probe_peers") {
      if (!v.IsSequence()) {
        s = absl::InvalidArgumentError("probe_peers: expected a list of peer names");
      } else {
        for (const auto& peer : v) {
          if (!peer.IsScalar()) {
            s = absl::InvalidArgumentError("probe_peers: expected a list of peer names");
            break;
          }
          p.add_probe_peers(peer.Scalar());
        }
      }
    } else if (!v.IsScalar()) {
      s = absl::InvalidArgumentError(absl::StrCat(key, ": expected a single value"));
    } else {
      s = SetKey(key, v.Scalar(), &p);
    }
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("confirm policy: ", At(v), s.message()));
  }
  return p;
}

std::string Percent(double ratio) { return absl::StrFormat("%.1f%%", 100 * ratio); }

GateStatus Gate(std::string name, roced::v1::GateState state, std::string detail) {
  GateStatus g;
  g.set_gate(std::move(name));
  g.set_state(state);
  g.set_detail(std::move(detail));
  return g;
}

GateStatus MeshLossGate(const ConfirmPolicy& policy, const roced::v1::ConfirmBaseline& base,
                        const std::optional<MeshSample>& m, bool over) {
  const double before = base.mesh_sent() > 0 ? static_cast<double>(base.mesh_lost()) / base.mesh_sent() : 0;
  const double allowed = policy.max_mesh_loss_increase();
  if (!m || m->sent < kMinGateProbes) {
    const uint64_t n = m ? m->sent : 0;
    return Gate(kGateMeshLoss, over ? roced::v1::GATE_STATE_FAILED : roced::v1::GATE_STATE_WAITING,
                absl::StrCat("only ", n, " mesh probes since the apply; the gate needs ", kMinGateProbes));
  }
  const double now = static_cast<double>(m->lost) / m->sent;
  const bool ok = now <= before + allowed;
  return Gate(kGateMeshLoss, ok ? roced::v1::GATE_STATE_HOLDING : roced::v1::GATE_STATE_FAILED,
              absl::StrCat("loss ", Percent(now), " over ", m->sent, " probes since the apply; ", Percent(before),
                           " before; allowed +", absl::StrFormat("%.1f", 100 * allowed), " points"));
}

GateStatus MeshP99Gate(const ConfirmPolicy& policy, const roced::v1::ConfirmBaseline& base,
                       const std::optional<MeshSample>& m, bool over) {
  const uint64_t answered = m ? m->sent - std::min(m->sent, m->lost) : 0;
  if (!m || answered < kMinGateProbes || !m->p99) {
    return Gate(kGateMeshP99, over ? roced::v1::GATE_STATE_FAILED : roced::v1::GATE_STATE_WAITING,
                absl::StrCat("only ", answered, " mesh probes answered since the apply; the gate needs ",
                             kMinGateProbes));
  }
  const absl::Duration before = util::FromProto(base.mesh_p99());
  const double ratio = policy.max_mesh_p99_ratio();
  const bool ok = *m->p99 <= before * ratio;
  return Gate(kGateMeshP99, ok ? roced::v1::GATE_STATE_HOLDING : roced::v1::GATE_STATE_FAILED,
              absl::StrCat("p99 ", absl::FormatDuration(*m->p99), " over ", answered, " answers since the apply; ",
                           absl::FormatDuration(before), " before; allowed x", absl::StrFormat("%.2f", ratio)));
}

}  // namespace

absl::Status ValidateConfirmPolicy(const ConfirmPolicy& p, absl::string_view prefix) {
  const absl::Duration w = util::FromProto(p.window());
  if (w < kMinConfirmWindow || w > kMaxConfirmWindow) {
    return Invalid(prefix, "window", absl::StrCat(absl::FormatDuration(w), " is out of range; allowed ",
                                                  absl::FormatDuration(kMinConfirmWindow), " to ",
                                                  absl::FormatDuration(kMaxConfirmWindow)));
  }
  if (!p.converged() && !p.no_pfc_storm() && !p.has_max_mesh_loss_increase() && !p.has_max_mesh_p99_ratio() &&
      p.probe_peers().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, ": names no gate; give at least one of converged, no_pfc_storm, max_mesh_loss_increase, "
                "max_mesh_p99_ratio, probe_peers"));
  }
  if (p.has_max_mesh_loss_increase() &&
      !(p.max_mesh_loss_increase() >= 0 && p.max_mesh_loss_increase() <= 1)) {
    return Invalid(prefix, "max_mesh_loss_increase",
                   absl::StrCat(p.max_mesh_loss_increase(), " is out of range; allowed 0 to 1 (0.01 = one point)"));
  }
  if (p.has_max_mesh_p99_ratio() && !(p.max_mesh_p99_ratio() >= 1 && p.max_mesh_p99_ratio() <= kMaxMeshP99Ratio)) {
    return Invalid(prefix, "max_mesh_p99_ratio",
                   absl::StrCat(p.max_mesh_p99_ratio(), " is out of range; allowed 1 to ", kMaxMeshP99Ratio));
  }
  if (p.probe_peers_size() > static_cast<int>(kMaxConfirmProbePeers)) {
    return Invalid(prefix, "probe_peers",
                   absl::StrCat(p.probe_peers_size(), " peers; allowed at most ", kMaxConfirmProbePeers));
  }
  std::set<std::string> seen;
  for (int i = 0; i < p.probe_peers_size(); ++i) {
    const std::string& peer = p.probe_peers(i);
    const std::string field = absl::StrCat("probe_peers[", i, "]");
    if (peer.empty() || peer.size() > probe_limits::kMaxPeerNameLength) {
      return Invalid(prefix, field, absl::StrCat("must be 1 to ", probe_limits::kMaxPeerNameLength, " bytes"));
    }
    if (!seen.insert(peer).second) return Invalid(prefix, field, absl::StrCat("'", peer, "' is listed twice"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ConfirmPolicy> ParseConfirmPolicy(absl::string_view text) {
  absl::string_view first = text.substr(0, text.find('\n'));
  const size_t eq = first.find('=');
  const bool spec = eq != absl::string_view::npos && first.substr(0, eq).find(':') == absl::string_view::npos;
  absl::StatusOr<ConfirmPolicy> p = spec ? ParseSpec(text) : ParseYaml(text);
  if (!p.ok()) return p.status();
  if (absl::Status s = ValidateConfirmPolicy(*p, "confirm policy"); !s.ok()) return s;
  return p;
}

bool SendsTraffic(const ConfirmPolicy& p) {
  return !p.probe_peers().empty() || p.has_max_mesh_loss_increase() || p.has_max_mesh_p99_ratio();
}

std::string DescribeConfirmPolicy(const ConfirmPolicy& p) {
  std::vector<std::string> gates;
  if (p.converged()) gates.push_back("converged");
  if (p.no_pfc_storm()) gates.push_back("no PFC storm");
  if (p.has_max_mesh_loss_increase()) {
    gates.push_back(absl::StrFormat("mesh loss +%.1f points", 100 * p.max_mesh_loss_increase()));
  }
  if (p.has_max_mesh_p99_ratio()) gates.push_back(absl::StrFormat("mesh p99 x%.2f", p.max_mesh_p99_ratio()));
  for (const auto& peer : p.probe_peers()) gates.push_back(absl::StrCat("probe ", peer));
  return absl::StrCat(absl::FormatDuration(util::FromProto(p.window())), ": ", absl::StrJoin(gates, ", "));
}

GateVerdict JudgeGates(const ConfirmPolicy& policy, const roced::v1::ConfirmBaseline& baseline,
                       const GateInputs& in) {
  GateVerdict v;
  const bool over = in.window_over;
  if (policy.converged()) {
    const bool failed = in.not_converged_checks >= 2;
    v.gates.push_back(Gate(kGateConverged,
                           failed ? roced::v1::GATE_STATE_FAILED : roced::v1::GATE_STATE_HOLDING,
                           in.not_converged_checks == 0
                               ? "the accepted config is in force"
                               : absl::StrCat("not in sync at ", in.not_converged_checks,
                                              " check(s) in a row: ", in.not_converged_fields)));
  }
  if (policy.no_pfc_storm()) {
    const uint64_t since = in.pfc_storms > baseline.pfc_storms() ? in.pfc_storms - baseline.pfc_storms() : 0;
    const bool failed = !in.stormed.empty() || since > 0;
    std::string detail = "no PFC storm since the apply";
    if (failed) {
      detail = absl::StrCat(since, " PFC storm(s) detected since the apply",
                            in.stormed.empty() ? "" : "; stormed now: ", absl::StrJoin(in.stormed, ", "));
    }
    v.gates.push_back(
        Gate(kGatePfcStorm, failed ? roced::v1::GATE_STATE_FAILED : roced::v1::GATE_STATE_HOLDING, detail));
  }
  if (policy.has_max_mesh_loss_increase()) v.gates.push_back(MeshLossGate(policy, baseline, in.mesh_since, over));
  if (policy.has_max_mesh_p99_ratio()) v.gates.push_back(MeshP99Gate(policy, baseline, in.mesh_since, over));
  for (const auto& peer : policy.probe_peers()) {
    const ProbeGateRun* run = nullptr;
    for (const auto& r : in.probes) {
      if (r.peer == peer) run = &r;
    }
    roced::v1::GateState state = roced::v1::GATE_STATE_WAITING;
    std::string detail = "not probed yet";
    if (run != nullptr && run->ran) {
      state = run->ok ? roced::v1::GATE_STATE_HOLDING : roced::v1::GATE_STATE_FAILED;
      detail = run->detail;
    } else if (over) {
      state = roced::v1::GATE_STATE_FAILED;
      detail = "no probe finished within the window";
    }
    v.gates.push_back(Gate(absl::StrCat(kGateProbe, " ", peer), state, detail));
  }
  bool all_hold = true;
  for (const auto& g : v.gates) {
    if (g.state() == roced::v1::GATE_STATE_FAILED && v.failed_reason.empty()) {
      v.failed_reason = std::string(g.gate().substr(0, g.gate().find(' ')));
      v.failed_detail = absl::StrCat(g.gate(), ": ", g.detail());
    }
    all_hold &= g.state() == roced::v1::GATE_STATE_HOLDING;
  }
  v.confirm = over && all_hold;
  return v;
}

}  // namespace roced::model
