#include "model/readiness.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace roced::model {
namespace {

using roced::v1::NodeState;

const roced::v1::ComponentHealth* Component(const NodeState& state, const std::string& name) {
  for (const auto& c : state.agent().components()) {
    if (c.name() == name) return &c;
  }
  return nullptr;
}

ReadinessCheck Discovery(const NodeState& state) {
  const auto* c = Component(state, "discovery");
  if (c == nullptr) return {"discovery", false, "devices not discovered yet"};
  if (!c->healthy()) return {"discovery", false, c->message()};
  return {"discovery", true, absl::StrCat(state.devices_size(), " RDMA device(s)")};
}

ReadinessCheck StateDir(const NodeState& state) {
  const auto* c = Component(state, "state");
  if (c == nullptr || c->healthy()) return {"state", true, "state directory usable"};
  return {"state", false, c->message()};
}

const char* SyncName(roced::v1::FieldSync s) {
  switch (s) {
    case roced::v1::FIELD_SYNC_DRIFTED:
      return "drifted";
    case roced::v1::FIELD_SYNC_FAILED:
      return "failed";
    case roced::v1::FIELD_SYNC_UNSUPPORTED:
      return "unsupported";
    case roced::v1::FIELD_SYNC_NOT_MANAGEABLE:
      return "not manageable on this driver";
    default:
      return "not in sync";
  }
}

ReadinessCheck Converged(const NodeState& state) {
  const auto& config = state.config();
  if (config.generation() == 0) return {"converged", true, "no config accepted: nothing is managed"};
  if (config.mode() == roced::v1::MODE_OBSERVE) {
    return {"converged", true, "observe mode: drift is reported, not corrected"};
  }
  const std::string gen = absl::StrCat("generation ", config.generation());
  if (config.converged()) return {"converged", true, gen};
  constexpr int kNamed = 3;
  std::vector<std::string> named;
  int off = 0;
  for (const auto& f : state.fields()) {
    if (f.sync() == roced::v1::FIELD_SYNC_IN_SYNC || f.sync() == roced::v1::FIELD_SYNC_NOT_MANAGEABLE) continue;
    if (++off <= kNamed) named.push_back(absl::StrCat(f.field(), " on ", f.object(), " ", SyncName(f.sync())));
  }
  if (named.empty()) return {"converged", false, absl::StrCat(gen, ": not yet reconciled")};
  return {"converged", false,
          absl::StrCat(gen, ": ", absl::StrJoin(named, ", "), off > kNamed ? absl::StrCat(" and ", off - kNamed, " more") : "")};
}

ReadinessCheck Confirmed(const NodeState& state, absl::Time now) {
  const auto& config = state.config();
  if (!config.has_confirm_deadline()) return {"confirmed", true, "no provisional config"};
  const absl::Time deadline =
      absl::FromUnixSeconds(config.confirm_deadline().seconds()) + absl::Nanoseconds(config.confirm_deadline().nanos());
  const std::string left = absl::FormatDuration(absl::Seconds(absl::ToInt64Seconds(deadline - now)));
  if (!config.has_confirm_policy()) {
    return {"confirmed", false,
            absl::StrCat("generation ", config.generation(), " is provisional: ConfirmConfig within ", left,
                         " or it is rolled back")};
  }
  // Judged by its confirm policy: the gates that do not hold yet, each
  // with why (failing first).
  std::vector<std::string> open;
  for (auto which : {roced::v1::GATE_STATE_FAILED, roced::v1::GATE_STATE_WAITING}) {
    for (const auto& g : config.gates()) {
      if (g.state() != which) continue;
      open.push_back(absl::StrCat(g.gate(), which == roced::v1::GATE_STATE_FAILED ? " FAILED (" : " waiting (",
                                  g.detail(), ")"));
    }
  }
  return {"confirmed", false,
          absl::StrCat("generation ", config.generation(), " is provisional, judged by its confirm policy (",
                       left, " to its deadline)", open.empty() ? "; every gate holds so far" : "; ",
                       absl::StrJoin(open, "; "))};
}

ReadinessCheck Grpc(const NodeState& state) {
  const auto* c = Component(state, "grpc");
  if (c == nullptr || c->healthy()) return {"grpc", true, "serving calls"};
  return {"grpc", false, c->message()};
}

}  // namespace

Readiness ReadinessOf(const NodeState& state, absl::Time now) {
  Readiness r;
  r.checks = {Discovery(state), StateDir(state), Converged(state), Confirmed(state, now), Grpc(state)};
  r.ready = true;
  for (const auto& c : r.checks) r.ready = r.ready && c.ok;
  return r;
}

std::string ReadinessText(const Readiness& r) {
  std::string out;
  for (const auto& c : r.checks) {
    absl::StrAppend(&out, c.ok ? "[+]" : "[-]", c.name, c.ok ? " ok" : " failed: ", c.ok ? "" : c.detail, "\n");
  }
  absl::StrAppend(&out, "readyz check ", r.ready ? "passed" : "failed", "\n");
  return out;
}

}  // namespace roced::model
