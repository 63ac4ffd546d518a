// model/confirm_policy: the policy's two spellings and bounds, and the
// gates' verdict: each gate fails on its own condition with its values,
// waits while evidence is short, and the window confirms only when every
// gate holds at its end.
#include "model/confirm_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "util/proto_time.h"

namespace roced::model {
namespace {

using ::testing::HasSubstr;
using roced::v1::ConfirmBaseline;
using roced::v1::ConfirmPolicy;

TEST(ConfirmPolicy, SpecAndYamlSpellTheSamePolicy) {
  absl::StatusOr<ConfirmPolicy> spec =
      ParseConfirmPolicy("window=60s,converged,no-pfc-storm,mesh-loss=0.01,mesh-p99=1.5,probe=node2,probe=node3");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<ConfirmPolicy> yaml = ParseConfirmPolicy(
      "window: 1m\nconverged: true\nno_pfc_storm: true\nmax_mesh_loss_increase: 0.01\n"
      "max_mesh_p99_ratio: 1.5\nprobe_peers: [node2, node3]\n");
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_EQ(spec->SerializeAsString(), yaml->SerializeAsString());
  EXPECT_EQ(util::FromProto(spec->window()), absl::Seconds(60));
  EXPECT_EQ(DescribeConfirmPolicy(*spec),
            "1m: converged, no PFC storm, mesh loss +1.0 points, mesh p99 x1.50, probe node2, probe node3");
}

TEST(ConfirmPolicy, BadInputNamesTheFieldAndItsRange) {
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"window=5s,converged", "window: 5s is out of range; allowed 10s to 1h"},
      {"window=2h,converged", "window: 2h is out of range"},
      {"window=60s", "names no gate"},
      {"window=60s,mesh-loss=1.5", "max_mesh_loss_increase: 1.5 is out of range; allowed 0 to 1"},
      {"window=60s,mesh-p99=0.5", "max_mesh_p99_ratio: 0.5 is out of range; allowed 1 to 100"},
      {"window=60s,probe=a,probe=a", "probe_peers[1]: 'a' is listed twice"},
      {"window=60s,probe=1,probe=2,probe=3,probe=4,probe=5,probe=6,probe=7,probe=8,probe=9",
       "probe_peers: 9 peers; allowed at most 8"},
      {"window=60s,colour=blue", "unknown key 'colour'"},
      {"window=soon,converged", "window: 'soon' is not a duration"},
      {"window=60s,mesh-loss=", "has no value after '='"},
      {"window: 60s\nconverged: maybe\n", "line 2, column 12: converged: 'maybe' is not true or false"},
      {"window: 60s\nprobe_peers: node2\n", "line 2, column 14: probe_peers: expected a list"},
      {"- a\n- b\n", "expected a YAML mapping"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<ConfirmPolicy> p = ParseConfirmPolicy(c.text);
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(p.status().message(), HasSubstr(c.error)) << c.text;
  }
}

ConfirmPolicy AllGates() {
  ConfirmPolicy p = *ParseConfirmPolicy("window=60s,converged,no-pfc-storm,mesh-loss=0.01,mesh-p99=2,probe=node2");
  return p;
}

ConfirmBaseline Baseline() {
  ConfirmBaseline b;
  b.set_mesh_sent(1000);
  b.set_mesh_lost(5);  // 0.5%
  *b.mutable_mesh_p99() = util::ToProto(absl::Microseconds(100));
  b.set_pfc_storms(3);
  return b;
}

// Every gate holding, mid-window.
GateInputs Healthy() {
  GateInputs in;
  in.pfc_storms = 3;
  in.mesh_since = MeshSample{.sent = 400, .lost = 4, .p99 = absl::Microseconds(150)};
  in.probes.push_back({.peer = "node2", .ran = true, .ok = true, .detail = "p50 20us"});
  return in;
}

TEST(JudgeGates, HoldingGatesConfirmOnlyAtTheWindowsEnd) {
  GateInputs in = Healthy();
  GateVerdict mid = JudgeGates(AllGates(), Baseline(), in);
  EXPECT_FALSE(mid.confirm);
  EXPECT_TRUE(mid.failed_reason.empty()) << mid.failed_detail;
  ASSERT_EQ(mid.gates.size(), 5u);
  for (const auto& g : mid.gates) EXPECT_EQ(g.state(), roced::v1::GATE_STATE_HOLDING) << g.gate();
  EXPECT_EQ(mid.gates[2].detail(), "loss 1.0% over 400 probes since the apply; 0.5% before; allowed +1.0 points");
  in.window_over = true;
  EXPECT_TRUE(JudgeGates(AllGates(), Baseline(), in).confirm);
}

TEST(JudgeGates, EachGateFailsOnItsOwnCondition) {
  struct Case {
    const char* name;
    void (*spoil)(GateInputs*);
    const char* reason;
    const char* detail;
  } cases[] = {
      {"two unconverged checks", [](GateInputs* in) { in->not_converged_checks = 2; in->not_converged_fields = "eth1 mtu"; },
       "converged", "converged: not in sync at 2 check(s) in a row: eth1 mtu"},
      {"a storm now", [](GateInputs* in) { in->stormed = {"eth1 priority 3"}; },
       "pfc_storm", "stormed now: eth1 priority 3"},
      {"a storm that came and went", [](GateInputs* in) { in->pfc_storms = 4; },
       "pfc_storm", "1 PFC storm(s) detected since the apply"},
      {"loss over baseline + 1 point", [](GateInputs* in) { in->mesh_since->lost = 7; },
       "mesh_loss", "loss 1.8% over 400 probes"},
      {"p99 over twice the baseline", [](GateInputs* in) { in->mesh_since->p99 = absl::Microseconds(201); },
       "mesh_p99", "p99 201us over 396 answers since the apply; 100us before; allowed x2.00"},
      {"a failed probe", [](GateInputs* in) { in->probes[0] = {.peer = "node2", .ran = true, .ok = false, .detail = "timed out"}; },
       "probe", "probe node2: timed out"},
  };
  for (const auto& c : cases) {
    GateInputs in = Healthy();
    c.spoil(&in);
    GateVerdict v = JudgeGates(AllGates(), Baseline(), in);
    EXPECT_EQ(v.failed_reason, c.reason) << c.name;
    EXPECT_THAT(v.failed_detail, HasSubstr(c.detail)) << c.name;
    in.window_over = true;
    EXPECT_FALSE(JudgeGates(AllGates(), Baseline(), in).confirm) << c.name;
  }
  // One unconverged check (a pass that corrected drift) is not a failure.
  GateInputs once = Healthy();
  once.not_converged_checks = 1;
  EXPECT_TRUE(JudgeGates(AllGates(), Baseline(), once).failed_reason.empty());
}

TEST(JudgeGates, ShortEvidenceWaitsThenFailsAtTheWindowsEnd) {
  GateInputs in = Healthy();
  in.mesh_since = MeshSample{.sent = kMinGateProbes - 1, .lost = 0, .p99 = absl::Microseconds(90)};
  in.probes.clear();
  GateVerdict mid = JudgeGates(AllGates(), Baseline(), in);
  EXPECT_TRUE(mid.failed_reason.empty()) << mid.failed_detail;
  EXPECT_EQ(mid.gates[2].state(), roced::v1::GATE_STATE_WAITING);
  EXPECT_EQ(mid.gates[4].detail(), "not probed yet");
  in.window_over = true;
  GateVerdict end = JudgeGates(AllGates(), Baseline(), in);
  EXPECT_FALSE(end.confirm);
  EXPECT_EQ(end.failed_reason, "mesh_loss");
  EXPECT_THAT(end.failed_detail, HasSubstr("only 49 mesh probes since the apply; the gate needs 50"));
  // No mesh at all: the same.
  in.mesh_since.reset();
  EXPECT_EQ(JudgeGates(AllGates(), Baseline(), in).failed_reason, "mesh_loss");
}

}  // namespace
}  // namespace roced::model
