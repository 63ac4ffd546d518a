// model::ReadinessOf, the rule behind the agent's /readyz and `rocectl
// ready`: each check fails on its own condition, names what is wrong, and
// passes where nothing is managed or corrected.
#include "model/readiness.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace roced::model {
namespace {

using ::testing::HasSubstr;
using roced::v1::NodeState;

// A node that is ready: devices found, state usable, generation 7 in
// force and converged, nothing provisional.
NodeState ReadyNode() {
  NodeState s;
  s.add_devices()->set_name("rxe0");
  auto* d = s.mutable_agent()->add_components();
  d->set_name("discovery");
  d->set_healthy(true);
  auto* st = s.mutable_agent()->add_components();
  st->set_name("state");
  st->set_healthy(true);
  s.mutable_config()->set_generation(7);
  s.mutable_config()->set_mode(roced::v1::MODE_ENFORCE);
  s.mutable_config()->set_converged(true);
  return s;
}

const ReadinessCheck& Check(const Readiness& r, const std::string& name) {
  for (const auto& c : r.checks) {
    if (c.name == name) return c;
  }
  static const ReadinessCheck kNone{"(absent)", false, ""};
  ADD_FAILURE() << "no check " << name;
  return kNone;
}

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(Readiness, AConvergedNodeWithNothingProvisionalIsReady) {
  Readiness r = ReadinessOf(ReadyNode(), kNow);
  EXPECT_TRUE(r.ready);
  ASSERT_EQ(r.checks.size(), 5u);
  for (const auto& c : r.checks) EXPECT_TRUE(c.ok) << c.name << ": " << c.detail;
  EXPECT_EQ(ReadinessText(r),
            "[+]discovery ok\n[+]state ok\n[+]converged ok\n[+]confirmed ok\n[+]grpc ok\nreadyz check passed\n");
}

TEST(Readiness, AConfigJudgedByItsPolicyNamesTheGatesThatDoNotHold) {
  NodeState s = ReadyNode();
  s.mutable_config()->mutable_confirm_deadline()->set_seconds(absl::ToUnixSeconds(kNow) + 40);
  s.mutable_config()->mutable_confirm_policy()->set_converged(true);
  auto* held = s.mutable_config()->add_gates();
  held->set_gate("converged");
  held->set_state(roced::v1::GATE_STATE_HOLDING);
  Readiness r = ReadinessOf(s, kNow);
  EXPECT_FALSE(Check(r, "confirmed").ok);
  EXPECT_EQ(Check(r, "confirmed").detail,
            "generation 7 is provisional, judged by its confirm policy (40s to its deadline); every gate holds so far");
  auto* wait = s.mutable_config()->add_gates();
  wait->set_gate("mesh_loss");
  wait->set_state(roced::v1::GATE_STATE_WAITING);
  wait->set_detail("only 12 mesh probes since the apply; the gate needs 50");
  auto* failed = s.mutable_config()->add_gates();
  failed->set_gate("probe node3");
  failed->set_state(roced::v1::GATE_STATE_FAILED);
  failed->set_detail("probe failed: connect_timeout");
  r = ReadinessOf(s, kNow);
  EXPECT_THAT(Check(r, "confirmed").detail,
              HasSubstr("; probe node3 FAILED (probe failed: connect_timeout); mesh_loss waiting (only 12 mesh probes"));
}

TEST(Readiness, AProvisionalConfigIsNotReadyUntilConfirmed) {
  NodeState s = ReadyNode();
  s.mutable_config()->mutable_confirm_deadline()->set_seconds(absl::ToUnixSeconds(kNow) + 45);
  Readiness r = ReadinessOf(s, kNow);
  EXPECT_FALSE(r.ready);
  EXPECT_FALSE(Check(r, "confirmed").ok);
  EXPECT_THAT(Check(r, "confirmed").detail, HasSubstr("generation 7 is provisional"));
  EXPECT_THAT(Check(r, "confirmed").detail, HasSubstr("within 45s"));
  EXPECT_TRUE(Check(r, "converged").ok);
  EXPECT_THAT(ReadinessText(r), HasSubstr("[-]confirmed failed: generation 7"));
  EXPECT_THAT(ReadinessText(r), HasSubstr("readyz check failed\n"));
}

TEST(Readiness, NotConvergedNamesTheFieldsOutOfSync) {
  NodeState s = ReadyNode();
  s.mutable_config()->set_converged(false);
  auto add = [&](const char* object, const char* field, roced::v1::FieldSync sync) {
    auto* f = s.add_fields();
    f->set_object(object);
    f->set_field(field);
    f->set_sync(sync);
  };
  add("eth0", "mtu", roced::v1::FIELD_SYNC_IN_SYNC);
  add("eth0", "qos.pfc.priorities", roced::v1::FIELD_SYNC_DRIFTED);
  add("eth0", "qos.trust", roced::v1::FIELD_SYNC_FAILED);
  add("eth1", "qos.pfc.priorities", roced::v1::FIELD_SYNC_DRIFTED);
  add("eth1", "qos.trust", roced::v1::FIELD_SYNC_UNSUPPORTED);
  add("eth2", "qos.trust", roced::v1::FIELD_SYNC_DRIFTED);
  Readiness r = ReadinessOf(s, kNow);
  EXPECT_FALSE(r.ready);
  const ReadinessCheck& c = Check(r, "converged");
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.detail,
            "generation 7: qos.pfc.priorities on eth0 drifted, qos.trust on eth0 failed, qos.pfc.priorities on eth1 "
            "drifted and 2 more");
  s.clear_fields();
  EXPECT_EQ(Check(ReadinessOf(s, kNow), "converged").detail, "generation 7: not yet reconciled");
}

TEST(Readiness, NothingManagedOrObserveModeCountsAsConverged) {
  NodeState s = ReadyNode();
  s.mutable_config()->set_converged(false);
  s.mutable_config()->set_mode(roced::v1::MODE_OBSERVE);
  EXPECT_TRUE(ReadinessOf(s, kNow).ready);
  EXPECT_THAT(Check(ReadinessOf(s, kNow), "converged").detail, HasSubstr("observe mode"));
  s.mutable_config()->set_mode(roced::v1::MODE_ENFORCE);
  s.mutable_config()->set_generation(0);
  EXPECT_TRUE(ReadinessOf(s, kNow).ready);
}

TEST(Readiness, DiscoveryMissingOrFailingAndAnUnusableStateDirAreNotReady) {
  NodeState s = ReadyNode();
  s.mutable_agent()->mutable_components(0)->set_healthy(false);
  s.mutable_agent()->mutable_components(0)->set_message("/sys/class/infiniband: permission denied");
  Readiness r = ReadinessOf(s, kNow);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(Check(r, "discovery").detail, "/sys/class/infiniband: permission denied");

  s = ReadyNode();
  s.mutable_agent()->mutable_components()->DeleteSubrange(0, 1);
  EXPECT_FALSE(Check(ReadinessOf(s, kNow), "discovery").ok);

  s = ReadyNode();
  s.mutable_agent()->mutable_components(1)->set_healthy(false);
  s.mutable_agent()->mutable_components(1)->set_message("state dir: no space left on device");
  r = ReadinessOf(s, kNow);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(Check(r, "state").detail, "state dir: no space left on device");
}

// A caller stalling the gRPC API (calls refused for a limit) shows in
// readiness, with the agent's reason; an agent not reporting "grpc" yet,
// or reporting it healthy, is ready.
TEST(Readiness, AStalledGrpcApiRefusingCallsIsNotReady) {
  NodeState s = ReadyNode();
  auto* g = s.mutable_agent()->add_components();
  g->set_name("grpc");
  g->set_healthy(true);
  EXPECT_TRUE(ReadinessOf(s, kNow).ready);
  g->set_healthy(false);
  g->set_message("refusing calls: too many calls in flight from viewer.test: at most 32");
  Readiness r = ReadinessOf(s, kNow);
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(Check(r, "grpc").detail, "refusing calls: too many calls in flight from viewer.test: at most 32");
}

}  // namespace
}  // namespace roced::model
