// Prior values: what an apply overwrote, recorded so a rollback that happens
// later (confirm timeout, restart after a crash) can write it back.
#include "reconcile/journal.h"

#include <gtest/gtest.h>

#include "google/protobuf/util/json_util.h"

#include "fake_node_io_for_test.h"

namespace roced::reconcile {
namespace {

// `prior` as the agent persists it in apply-journal.json and reads it back
// (field names, oneof, maps); empty when either way fails.
std::vector<roced::v1::PriorValue> ThroughJson(const std::vector<roced::v1::PriorValue>& prior) {
  roced::v1::ApplyJournal written;
  for (const auto& p : prior) *written.add_prior() = p;
  std::string json;
  roced::v1::ApplyJournal journal;
  if (!google::protobuf::util::MessageToJsonString(written, &json).ok() ||
      !google::protobuf::util::JsonStringToMessage(json, &journal).ok()) {
    ADD_FAILURE() << "journal does not go through JSON: " << json;
    return {};
  }
  return {journal.prior().begin(), journal.prior().end()};
}

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    InterfaceObserved eth0;
    eth0.mtu = 1500;
    eth0.dscp = DscpMap{{26, 3}};
    Ets ets;
    ets.tc_bw = {100, 0, 0, 0, 0, 0, 0, 0};
    ets.tsa = {2, 0, 0, 0, 0, 0, 0, 0};
    eth0.ets = ets;
    eth0.pfc = Pfc{0x08, 0};
    eth0.ecn_np = 0x08;
    eth0.ecn_rp = 0x08;
    eth0.roce_mode = roced::v1::ROCE_MODE_V2;
    eth0.roce_tos = 106;
    io_.interfaces["eth0"] = eth0;
    io_.hugepages[HugepagePool{2048, -1}] = 16;
    before_ = io_.interfaces["eth0"];
  }

  // A plan that changes every field of eth0 and the hugepage pool, as
  // ComputePlan would make it against the current fake node.
  Plan ChangeEverything(std::vector<Target>* targets) {
    targets->assign(1, Target{0, "eth0", "rxe0", 1});
    Plan plan;
    auto add = [&](Field f, Value wanted) {
      Step s;
      s.field = f;
      s.target = 0;
      s.object = f == Field::kHugepages ? "hugepages-2048kB" : "eth0";
      if (f == Field::kHugepages) s.pool = HugepagePool{2048, -1};
      s.current = f == Field::kHugepages ? ObservedValue(s, nullptr, io_.hugepages[s.pool])
                                         : ObservedValue(s, &io_.interfaces["eth0"], std::nullopt);
      s.wanted = std::move(wanted);
      plan.steps.push_back(std::move(s));
    };
    Ets ets2;
    ets2.prio_tc = {0, 0, 0, 1, 0, 0, 0, 0};
    ets2.tc_bw = {50, 50, 0, 0, 0, 0, 0, 0};
    ets2.tsa = {2, 2, 0, 0, 0, 0, 0, 0};
    add(Field::kHugepages, uint64_t{64});
    add(Field::kMtu, uint64_t{9000});
    add(Field::kDscp, DscpMap{{34, 4}, {48, 6}});
    add(Field::kEts, ets2);
    add(Field::kPfc, Pfc{0x10, 7});
    add(Field::kEcnNp, uint64_t{0x10});
    add(Field::kEcnRp, uint64_t{0x30});
    add(Field::kRoceMode, uint64_t{roced::v1::ROCE_MODE_V1});
    add(Field::kRoceTos, uint64_t{0});
    return plan;
  }

  FakeNodeIoForTest io_;
  InterfaceObserved before_;
};

TEST_F(JournalTest, RestorePlanWritesEveryOverwrittenFieldBack) {
  std::vector<Target> targets;
  Plan plan = ChangeEverything(&targets);
  std::vector<roced::v1::PriorValue> prior = PriorValues(plan, targets);
  ASSERT_EQ(prior.size(), 9u);
  ASSERT_TRUE(ApplyPlan(plan, targets, &io_).success());
  ASSERT_EQ(io_.interfaces["eth0"].mtu, std::optional<uint32_t>(9000));

  // As persisted: through JSON and back (field names, oneof, maps).
  std::vector<Target> rtargets;
  Plan restore = RestorePlan(ThroughJson(prior), &io_, &rtargets);
  ASSERT_EQ(restore.steps.size(), 9u);
  ASSERT_EQ(rtargets.size(), 1u);
  EXPECT_EQ(rtargets[0].netdev, "eth0");
  EXPECT_EQ(rtargets[0].rdma_device, "rxe0");
  for (size_t i = 1; i < restore.steps.size(); ++i) {
    EXPECT_LE(restore.steps[i - 1].field, restore.steps[i].field) << "restore runs in the apply order";
  }
  ASSERT_TRUE(ApplyPlan(restore, rtargets, &io_).success());
  const InterfaceObserved& now = io_.interfaces["eth0"];
  EXPECT_EQ(now.mtu, before_.mtu);
  EXPECT_EQ(now.dscp, before_.dscp);
  // As the fake (mlx5) reads ETS back: strict classes at 100%.
  ASSERT_TRUE(now.ets && before_.ets);
  EXPECT_TRUE(Satisfies(Spec(Field::kEts), Value(*now.ets), Value(*before_.ets)));
  EXPECT_EQ(now.ets->prio_tc, before_.ets->prio_tc);
  EXPECT_EQ(now.pfc, before_.pfc);
  EXPECT_EQ(now.ecn_np, before_.ecn_np);
  EXPECT_EQ(now.ecn_rp, before_.ecn_rp);
  EXPECT_EQ(now.roce_mode, before_.roce_mode);
  EXPECT_EQ(now.roce_tos, before_.roce_tos);
  EXPECT_EQ(io_.hugepages[(HugepagePool{2048, -1})], std::optional<uint64_t>(16));

  // Restored: nothing left to do.
  EXPECT_TRUE(RestorePlan(prior, &io_, &rtargets).empty());
}

TEST_F(JournalTest, FieldsTheNodeNoLongerHasAreSkipped) {
  std::vector<Target> targets;
  Plan plan = ChangeEverything(&targets);
  std::vector<roced::v1::PriorValue> prior = PriorValues(plan, targets);
  ASSERT_TRUE(ApplyPlan(plan, targets, &io_).success());
  io_.interfaces["eth0"].pfc.reset();  // e.g. the driver lost DCB
  io_.hugepages.erase(HugepagePool{2048, -1});
  std::vector<Target> rtargets;
  Plan restore = RestorePlan(prior, &io_, &rtargets);
  EXPECT_EQ(restore.steps.size(), 7u);
  for (const auto& s : restore.steps) {
    EXPECT_NE(s.field, Field::kPfc);
    EXPECT_NE(s.field, Field::kHugepages);
  }
}

TEST_F(JournalTest, MergeKeepsTheOldestValueOfEachField) {
  roced::v1::PriorValue a;
  a.set_field("mtu");
  a.set_netdev("eth0");
  a.set_number(1500);
  roced::v1::PriorValue b = a;
  b.set_number(4200);  // what a second provisional apply overwrote
  roced::v1::PriorValue c = a;
  c.set_netdev("eth1");
  c.set_number(9000);
  auto merged = MergePrior({a}, {b, c});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].number(), 1500u);
  EXPECT_EQ(merged[1].netdev(), "eth1");
}

TEST_F(JournalTest, MalformedEntriesAreIgnored) {
  roced::v1::PriorValue wrong_shape;
  wrong_shape.set_field("qos.pfc");
  wrong_shape.set_netdev("eth0");
  wrong_shape.set_number(3);  // PFC is not a number
  roced::v1::PriorValue unknown_field;
  unknown_field.set_field("qos.nonsense");
  unknown_field.set_netdev("eth0");
  unknown_field.set_number(3);
  roced::v1::PriorValue bad_ets;
  bad_ets.set_field("qos.ets");
  bad_ets.set_netdev("eth0");
  bad_ets.mutable_ets()->add_tsa(0);  // not 8 entries
  std::vector<Target> targets;
  EXPECT_TRUE(RestorePlan({wrong_shape, unknown_field, bad_ets}, &io_, &targets).empty());
}

// The port buffers (their own value kind), PFC prevention and a DCQCN
// parameter survive the journal as persisted and are written back.
TEST_F(JournalTest, BuffersPreventionAndDcqcnGoThroughJsonAndBack) {
  io_.Update("eth0", [](InterfaceObserved& o) {
    o.buffer = PortBuffer{{0, 0, 0, 0, 0, 0, 0, 0}, {262144, 131072, 0, 0, 0, 0, 0, 0}, 524288};
    o.pfc_prevention = 0;
    o.dcqcn = {{"cnp_dscp", 48}, {"rpg_ai_rate", 5}};
  });
  const InterfaceObserved before = io_.Interface("eth0");
  std::vector<Target> targets{Target{0, "eth0", "rxe0", 1}};
  Plan plan;
  auto add = [&](Field f, Value wanted) {
    Step s;
    s.field = f;
    s.object = "eth0";
    s.current = ObservedValue(s, &io_.interfaces["eth0"], std::nullopt);
    s.wanted = std::move(wanted);
    plan.steps.push_back(std::move(s));
  };
  add(Field::kPortBuffer, PortBuffer{{0, 0, 0, 1, 0, 0, 0, 0}, {131072, 262144, 0, 0, 0, 0, 0, 0}, 524288});
  add(Field::kPfcPrevention, uint64_t{500});
  add(Field::kCnpDscp, uint64_t{46});
  std::vector<roced::v1::PriorValue> prior = PriorValues(plan, targets);
  ASSERT_EQ(prior.size(), 3u);
  EXPECT_EQ(prior[0].value_case(), roced::v1::PriorValue::kBuffer);
  ASSERT_TRUE(ApplyPlan(plan, targets, &io_).success());

  std::vector<Target> rtargets;
  Plan restore = RestorePlan(ThroughJson(prior), &io_, &rtargets);
  ASSERT_EQ(restore.steps.size(), 3u);
  ASSERT_TRUE(ApplyPlan(restore, rtargets, &io_).success());
  const InterfaceObserved now = io_.Interface("eth0");
  EXPECT_EQ(now.buffer, before.buffer);
  EXPECT_EQ(now.buffer->size, before.buffer->size);
  EXPECT_EQ(now.pfc_prevention, before.pfc_prevention);
  EXPECT_EQ(now.dcqcn, before.dcqcn);
}

}  // namespace
}  // namespace roced::reconcile
