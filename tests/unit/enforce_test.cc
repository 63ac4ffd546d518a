// The reconciler's pass and its back-off, over the in-memory node: which
// failures wait (by status code, whatever the field), for how long, and
// what the field statuses say meanwhile.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_node_io_for_test.h"
#include "model/config_yaml.h"
#include "model/validate.h"
#include "reconcile/enforce.h"
#include "reconcile/plan.h"

namespace roced::reconcile {
namespace {

roced::v1::NodeConfig Config(const std::string& body) {
  std::vector<roced::v1::ValidationIssue> issues;
  auto decoded = model::DecodeYamlConfig("apiVersion: roced/v1\nkind: NodeConfig\n" + body, &issues);
  EXPECT_TRUE(decoded.ok()) << decoded.status();
  roced::v1::NodeConfig c = decoded->config;
  model::ApplyDefaults(&c);
  return c;
}

constexpr char kPfc3[] = "interfaces:\n  - match: {netdev: eth0}\n    qos: {pfc: {priorities: [3]}}\n";

struct EnforceTest : ::testing::Test {
  EnforceTest() {
    InterfaceObserved eth0;
    eth0.mtu = 1500;
    eth0.pfc = Pfc{};
    io.interfaces["eth0"] = eth0;
  }
  Enforcer Make(absl::Duration backoff = absl::Minutes(5)) {
    return Enforcer(&io, [](const std::string& nd) { return nd == "eth0"; },
                    {.backoff = backoff, .apply = {.verify_attempts = 2, .verify_interval = absl::ZeroDuration()}});
  }
  const roced::v1::FieldStatus* Field(const PassResult& pass, const std::string& path) {
    for (const auto& f : pass.fields) {
      if (f.field() == path) return &f;
    }
    return nullptr;
  }
  FakeNodeIoForTest io;
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
};

TEST_F(EnforceTest, InSyncNodeIsANoopAndConverged) {
  io.interfaces["eth0"].pfc->enabled = 1u << 3;
  Enforcer e = Make();
  PassResult pass = e.Enforce(Config(kPfc3), {}, t0);
  EXPECT_EQ(pass.outcome, PassResult::Outcome::kNoop);
  EXPECT_TRUE(pass.converged);
  EXPECT_EQ(io.writes, 0);
  EXPECT_STREQ(OutcomeName(pass.outcome), "noop");
}

TEST_F(EnforceTest, DifferenceIsAppliedAndTheFieldsAreObservedAgain) {
  Enforcer e = Make();
  PassResult pass = e.Enforce(Config(kPfc3), {}, t0);
  EXPECT_EQ(pass.outcome, PassResult::Outcome::kApplied);
  ASSERT_EQ(pass.steps.size(), 1u);
  EXPECT_EQ(pass.apply.steps(0).outcome(), roced::v1::STEP_OUTCOME_APPLIED);
  EXPECT_TRUE(pass.converged);
  ASSERT_NE(Field(pass, "qos.pfc"), nullptr);
  EXPECT_EQ(Field(pass, "qos.pfc")->sync(), roced::v1::FIELD_SYNC_IN_SYNC);
  EXPECT_EQ(io.interfaces["eth0"].pfc->enabled, 1u << 3);
}

TEST_F(EnforceTest, ObserveModeReportsAndWritesNothing) {
  Enforcer e = Make();
  PassResult pass = e.Enforce(Config(std::string("mode: observe\n") + kPfc3), {}, t0);
  EXPECT_EQ(pass.outcome, PassResult::Outcome::kDriftObserved);
  EXPECT_EQ(pass.steps.size(), 1u);
  EXPECT_FALSE(pass.converged);
  EXPECT_EQ(io.writes, 0);
}

TEST_F(EnforceTest, UnresolvedInterfaceFailsNamingTheField) {
  Enforcer e = Make();
  PassResult pass = e.Enforce(Config("interfaces:\n  - match: {netdev: eth9}\n    mtu: 9000\n"), {}, t0);
  EXPECT_EQ(pass.outcome, PassResult::Outcome::kFailed);
  EXPECT_TRUE(absl::IsInvalidArgument(pass.targets));
  ASSERT_EQ(pass.fields.size(), 1u);
  EXPECT_EQ(pass.fields[0].field(), "interfaces");
  EXPECT_THAT(pass.fields[0].message(), ::testing::HasSubstr("interfaces[0].match.netdev"));
}

// The back-off keys on the status code, not the field: a PFC write the
// driver refuses for lack of resources waits like a short hugepage pool.
TEST_F(EnforceTest, ResourceExhaustedWaitsOutTheBackOffWhateverTheField) {
  io.fail[Field::kPfc] = absl::ResourceExhaustedError("no free headroom buffer for priority 3");
  Enforcer e = Make(absl::Minutes(5));
  PassResult first = e.Enforce(Config(kPfc3), {}, t0);
  EXPECT_EQ(first.outcome, PassResult::Outcome::kFailed);
  EXPECT_EQ(first.apply.steps(0).code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  const int writes = io.writes;

  PassResult held = e.Enforce(Config(kPfc3), {}, t0 + absl::Minutes(1));
  EXPECT_EQ(held.outcome, PassResult::Outcome::kNoop);
  EXPECT_EQ(io.writes, writes) << "a held step is not written";
  EXPECT_FALSE(held.converged);
  ASSERT_NE(Field(held, "qos.pfc"), nullptr);
  EXPECT_EQ(Field(held, "qos.pfc")->sync(), roced::v1::FIELD_SYNC_FAILED);
  EXPECT_EQ(Field(held, "qos.pfc")->message(), "no free headroom buffer for priority 3; next attempt in 4m");

  io.fail.clear();
  PassResult again = e.Enforce(Config(kPfc3), {}, t0 + absl::Minutes(5));
  EXPECT_EQ(again.outcome, PassResult::Outcome::kApplied);
  EXPECT_TRUE(again.converged);
}

TEST_F(EnforceTest, OtherFailuresAreRetriedOnTheNextPass) {
  io.fail[Field::kPfc] = absl::UnavailableError("link busy");
  Enforcer e = Make();
  EXPECT_EQ(e.Enforce(Config(kPfc3), {}, t0).outcome, PassResult::Outcome::kFailed);
  const int writes = io.writes;
  EXPECT_EQ(e.Enforce(Config(kPfc3), {}, t0 + absl::Seconds(1)).outcome, PassResult::Outcome::kFailed);
  EXPECT_GT(io.writes, writes);
}

TEST_F(EnforceTest, ANewWantedValueIsTriedAtOnce) {
  io.fail[Field::kPfc] = absl::ResourceExhaustedError("no headroom");
  Enforcer e = Make();
  e.Enforce(Config(kPfc3), {}, t0);
  const int writes = io.writes;
  e.Enforce(Config("interfaces:\n  - match: {netdev: eth0}\n    qos: {pfc: {priorities: [4]}}\n"), {},
            t0 + absl::Seconds(1));
  EXPECT_GT(io.writes, writes);
}

TEST(BackoffPolicy, RecordsOnlyNonRetryableFailuresAndForgetsOnSuccess) {
  BackoffPolicy p(absl::Seconds(10));
  Step s;
  s.field = Field::kMtu;
  s.object = "eth0";
  s.current = uint64_t{1500};
  s.wanted = uint64_t{9000};
  const absl::Time t = absl::FromUnixSeconds(100);
  roced::v1::StepResult r;
  r.set_outcome(roced::v1::STEP_OUTCOME_FAILED);
  r.set_code(static_cast<int>(absl::StatusCode::kInternal));
  p.Record(s, r, t);
  EXPECT_FALSE(p.HeldUntil(s, t, nullptr));
  r.set_code(static_cast<int>(absl::StatusCode::kResourceExhausted));
  r.set_error("short");
  p.Record(s, r, t);
  std::string why;
  EXPECT_EQ(p.HeldUntil(s, t + absl::Seconds(9), &why), t + absl::Seconds(10));
  EXPECT_EQ(why, "short");
  EXPECT_FALSE(p.HeldUntil(s, t + absl::Seconds(10), nullptr));
  // Rolled back with the rest of its apply: not held.
  r.set_outcome(roced::v1::STEP_OUTCOME_ROLLED_BACK);
  p.Record(s, r, t);
  EXPECT_FALSE(p.HeldUntil(s, t, nullptr));
  // Expired entries go at the next record: the map stays bounded.
  r.set_outcome(roced::v1::STEP_OUTCOME_PARTIAL);
  p.Record(s, r, t);
  Step other = s;
  other.object = "eth1";
  p.Record(other, r, t + absl::Seconds(11));
  EXPECT_EQ(p.size(), 1u);
}

}  // namespace
}  // namespace roced::reconcile
