// Reconcile cases as data. tests/fixtures/reconcile/<case>/ holds
// observed.yaml (the node), desired.yaml (a NodeConfig), plan.txt (the
// expected plan, one step per line, or an error line) and fields.txt (the
// expected field statuses, one per managed field: in sync, drifted or
// unsupported, desired vs observed). One table-driven test runs every case;
// for each it also applies the plan to an in-memory node and checks that
// planning again gives an empty plan (idempotence).
//
// tests/fixtures/reconcile/restore/<case>/ holds journal.json (an
// ApplyJournal as the agent persists it), observed.yaml and plan.txt (the
// targets and steps RestorePlan makes); applying that plan must leave
// nothing to restore.
//
// After an intended change, ROCED_UPDATE_GOLDEN=1 rewrites every expected
// file from what the code now does (review the diff before committing it):
//   ROCED_UPDATE_GOLDEN=1 build/bin/reconcile_test
//
// The second half proves apply/verify/rollback with failing kernel calls.
#include <yaml-cpp/yaml.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "fake_node_io_for_test.h"
#include "model/config_yaml.h"
#include "model/validate.h"
#include "reconcile/apply.h"
#include "reconcile/fields.h"
#include "reconcile/journal.h"
#include "reconcile/plan.h"
#include "util/fs.h"

namespace roced::reconcile {
namespace {

namespace fs = std::filesystem;

std::string CasesDir() { return std::string(ROCED_FIXTURES) + "/reconcile"; }

uint8_t MaskOf(const YAML::Node& list) {
  uint8_t m = 0;
  for (const auto& p : list) m |= static_cast<uint8_t>(1u << p.as<int>());
  return m;
}

std::array<uint8_t, 8> Arr8(const YAML::Node& n) {
  std::array<uint8_t, 8> a{};
  for (size_t i = 0; i < 8 && i < n.size(); ++i) a[i] = static_cast<uint8_t>(n[i].as<int>());
  return a;
}

// observed.yaml -> the fake node plus the discovery view of it.
struct Node {
  FakeNodeIoForTest io;
  std::vector<roced::v1::RdmaDevice> devices;
};

Node LoadObserved(const std::string& path) {
  Node node;
  YAML::Node doc = YAML::LoadFile(path);
  for (const auto& i : doc["interfaces"]) {
    std::string nd = i["netdev"].as<std::string>();
    InterfaceObserved o;
    if (i["mtu"]) o.mtu = i["mtu"].as<uint32_t>();
    if (i["dscp"]) {
      DscpMap m;
      for (auto it = i["dscp"].begin(); it != i["dscp"].end(); ++it) {
        m[static_cast<uint8_t>(it->first.as<int>())] = static_cast<uint8_t>(it->second.as<int>());
      }
      o.dscp = m;
    }
    if (i["ets"]) {
      Ets e;
      e.prio_tc = Arr8(i["ets"]["prio_tc"]);
      e.tc_bw = Arr8(i["ets"]["tc_bw"]);
      e.tsa = Arr8(i["ets"]["tsa"]);
      o.ets = e;
    }
    if (i["pfc"]) o.pfc = Pfc{MaskOf(i["pfc"]["enabled"]), i["pfc"]["delay"].as<uint16_t>()};
    if (i["ecn_np"]) o.ecn_np = MaskOf(i["ecn_np"]);
    if (i["ecn_rp"]) o.ecn_rp = MaskOf(i["ecn_rp"]);
    if (i["roce_mode"]) {
      o.roce_mode = i["roce_mode"].as<std::string>() == "v2" ? roced::v1::ROCE_MODE_V2 : roced::v1::ROCE_MODE_V1;
    }
    if (i["roce_tos"]) o.roce_tos = i["roce_tos"].as<uint32_t>();
    if (i["buffer"]) {
      PortBuffer b;
      b.prio2buffer = Arr8(i["buffer"]["prio2buffer"]);
      for (size_t k = 0; k < 8 && k < i["buffer"]["size"].size(); ++k) b.size[k] = i["buffer"]["size"][k].as<uint32_t>();
      b.total_size = i["buffer"]["total"].as<uint32_t>(0);
      o.buffer = b;
    }
    if (i["dcbx"]) o.dcbx_host = i["dcbx"].as<std::string>() == "host";
    if (i["driver"]) o.driver = i["driver"].as<std::string>();  // ethtool -i: the driver profile
    if (i["pfc_prevention"]) o.pfc_prevention = i["pfc_prevention"].as<uint16_t>();
    for (auto it = i["dcqcn"].begin(); i["dcqcn"] && it != i["dcqcn"].end(); ++it) {
      o.dcqcn[it->first.as<std::string>()] = it->second.as<uint64_t>();
    }
    node.io.interfaces[nd] = o;
    if (i["rdma_device"]) {
      roced::v1::RdmaDevice d;
      d.set_name(i["rdma_device"].as<std::string>());
      if (i["pci"]) d.set_pci_address(i["pci"].as<std::string>());
      auto* p = d.add_ports();
      p->set_number(1);
      p->set_netdev(nd);
      node.devices.push_back(d);
    }
  }
  for (const auto& h : doc["hugepages"]) {
    HugepagePool pool{h["size_kb"].as<uint64_t>(), h["numa_node"] ? h["numa_node"].as<int32_t>() : -1};
    node.io.hugepages[pool] = h["count"].as<uint64_t>();
    if (h["limit"]) node.io.hugepage_limit[pool] = h["limit"].as<uint64_t>();
  }
  return node;
}

std::string RenderPlan(const Plan& plan) {
  std::string out;
  for (const Step& s : plan.steps) {
    absl::StrAppend(&out, s.object, " ", FieldPath(s.field), ": ", Render(s.current, s.field), " -> ",
                    Render(s.wanted, s.field), s.disruptive ? " (disruptive)" : "", "\n");
  }
  return out;
}

// One line per field status: "eth0 qos.pfc: DRIFTED | desired ... | observed ...",
// and the message when there is one.
std::string RenderFields(const Plan& plan) {
  std::string out;
  for (const roced::v1::FieldStatus& f : plan.fields) {
    absl::StrAppend(&out, f.object(), " ", f.field(), ": ",
                    absl::StripPrefix(roced::v1::FieldSync_Name(f.sync()), "FIELD_SYNC_"), " | desired ",
                    f.desired(), " | observed ", f.observed(), f.message().empty() ? "" : " | ", f.message(),
                    "\n");
  }
  return out;
}

bool UpdatingGolden() {
  const char* v = std::getenv("ROCED_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

// `actual` must equal the file at `path`; with ROCED_UPDATE_GOLDEN=1 it
// becomes the file instead, and the test says so and is skipped (a run that
// rewrote its expectations proved nothing, and must not read as passed).
void ExpectGolden(const std::string& path, const std::string& actual) {
  if (UpdatingGolden()) {
    std::ofstream(path, std::ios::trunc) << actual;
    GTEST_SKIP() << "ROCED_UPDATE_GOLDEN=1: rewrote " << path << "; review the diff";
  }
  auto expected = util::ReadFile(path);
  ASSERT_TRUE(expected.ok()) << path << " missing (ROCED_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(actual, *expected) << path << " differs (after an intended change: ROCED_UPDATE_GOLDEN=1, "
                               << "then review the diff)";
}

// The case directories under `dir`, sorted; `skip` names one that is not a case.
std::vector<std::string> CaseNames(const std::string& dir, const std::string& skip = "") {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name != skip) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> PlanCaseNames() { return CaseNames(CasesDir(), "restore"); }
std::vector<std::string> RestoreCaseNames() { return CaseNames(CasesDir() + "/restore"); }

class ReconcileCase : public ::testing::TestWithParam<std::string> {};

TEST_P(ReconcileCase, PlanMatchesExpectedAndApplyingItConverges) {
  const std::string dir = CasesDir() + "/" + GetParam();
  Node node = LoadObserved(dir + "/observed.yaml");
  std::vector<roced::v1::ValidationIssue> issues;
  auto text = util::ReadFile(dir + "/desired.yaml");
  ASSERT_TRUE(text.ok());
  auto decoded = model::DecodeYamlConfig(*text, &issues);
  ASSERT_TRUE(decoded.ok()) << model::FormatIssues(dir, issues);
  model::ValidateConfig(decoded->config, &decoded->positions, &issues);
  ASSERT_FALSE(model::HasErrors(issues)) << model::FormatIssues(dir, issues);

  auto exists = [&](const std::string& nd) { return node.io.interfaces.count(nd) > 0; };
  auto targets = ResolveTargets(decoded->config, node.devices, exists);
  if (!targets.ok()) {
    ExpectGolden(dir + "/plan.txt", absl::StrCat("error: ", targets.status().message(), "\n"));
    if (UpdatingGolden()) fs::remove(dir + "/fields.txt");
    EXPECT_FALSE(fs::exists(dir + "/fields.txt")) << "a case that fails to resolve plans no fields";
    return;
  }
  Observed before = ObserveAll(&node.io, decoded->config, *targets);
  Plan plan = ComputePlan(decoded->config, *targets, before);
  ExpectGolden(dir + "/plan.txt", RenderPlan(plan));
  ExpectGolden(dir + "/fields.txt", RenderFields(plan));

  // Applying it converges: the same inputs now plan nothing, except a
  // hugepage pool whose case sets a limit below the count it wants (the
  // node cannot do it; that step stays, and only that one).
  ApplyOptions fast{2, absl::ZeroDuration()};
  roced::v1::ApplyResult result = ApplyPlan(plan, *targets, &node.io, fast);
  EXPECT_TRUE(result.success()) << result.DebugString();
  Plan again = ComputePlan(decoded->config, *targets, ObserveAll(&node.io, decoded->config, *targets));
  for (const Step& s : again.steps) {
    auto limit = node.io.hugepage_limit.find(s.pool);
    const bool beyond_limit = s.field == Field::kHugepages && limit != node.io.hugepage_limit.end() &&
                              std::get<uint64_t>(s.wanted) > limit->second;
    EXPECT_TRUE(beyond_limit) << "not converged: " << RenderPlan(again);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ReconcileCase, ::testing::ValuesIn(PlanCaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& tpi) { return tpi.param; });

TEST(ReconcileCases, AtLeastTwentyFiveCasesExist) { EXPECT_GE(PlanCaseNames().size(), 25u); }

// "target eth0 rxe0/1" (or just the netdev) per target, then the steps.
std::string RenderRestore(const std::vector<Target>& targets, const Plan& plan) {
  std::string out;
  for (const Target& t : targets) {
    absl::StrAppend(&out, "target ", t.netdev,
                    t.rdma_device.empty() ? "" : absl::StrCat(" ", t.rdma_device, "/", t.port), "\n");
  }
  return out + RenderPlan(plan);
}

class RestoreCase : public ::testing::TestWithParam<std::string> {};

TEST_P(RestoreCase, RestorePlanMatchesExpectedAndApplyingItRestores) {
  const std::string dir = CasesDir() + "/restore/" + GetParam();
  Node node = LoadObserved(dir + "/observed.yaml");
  auto json = util::ReadFile(dir + "/journal.json");
  ASSERT_TRUE(json.ok()) << json.status();
  roced::v1::ApplyJournal journal;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &journal).ok()) << dir << "/journal.json";
  const std::vector<roced::v1::PriorValue> prior(journal.prior().begin(), journal.prior().end());

  std::vector<Target> targets;
  Plan plan = RestorePlan(prior, &node.io, &targets);
  ExpectGolden(dir + "/plan.txt", RenderRestore(targets, plan));

  ApplyOptions fast{2, absl::ZeroDuration()};
  roced::v1::ApplyResult result = ApplyPlan(plan, targets, &node.io, fast);
  EXPECT_TRUE(result.success()) << result.DebugString();
  Plan again = RestorePlan(prior, &node.io, &targets);
  EXPECT_TRUE(again.empty()) << "not restored: " << RenderPlan(again);
}

INSTANTIATE_TEST_SUITE_P(Restore, RestoreCase, ::testing::ValuesIn(RestoreCaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& tpi) { return tpi.param; });

TEST(ReconcileCases, AtLeastSixRestoreCasesExist) { EXPECT_GE(RestoreCaseNames().size(), 6u); }

// --- the field table --------------------------------------------------------

TEST(FieldTable, OneEntryPerFieldInApplyOrder) {
  ASSERT_EQ(Fields().size(), kFieldCount);
  EXPECT_EQ(static_cast<size_t>(Field::kRoceTos) + 1, kFieldCount) << "a Field without a table entry";
  std::set<std::string> paths;
  for (size_t i = 0; i < kFieldCount; ++i) {
    const FieldSpec& spec = Fields()[i];
    EXPECT_EQ(spec.field, static_cast<Field>(i)) << spec.path << ": the table must follow the apply order";
    EXPECT_EQ(&Spec(spec.field), &spec);
    EXPECT_EQ(SpecByPath(spec.path), &spec);
    EXPECT_STREQ(FieldPath(spec.field), spec.path);
    EXPECT_TRUE(paths.insert(spec.path).second) << "two fields with path " << spec.path;
    EXPECT_EQ(spec.desired == nullptr, spec.scope == Scope::kHugepagePool) << spec.path;
    EXPECT_TRUE(spec.observe && spec.render && spec.to_prior && spec.from_prior && spec.write) << spec.path;
  }
  EXPECT_EQ(SpecByPath("qos.nonsense"), nullptr);
}

// Every field's value goes into a journal entry and comes back equal; an
// entry of another field's shape is refused.
TEST(FieldTable, ValuesGoThroughTheJournalAndBack) {
  Ets ets;
  ets.prio_tc = {0, 0, 0, 1, 0, 0, 0, 0};
  ets.tc_bw = {50, 50, 0, 0, 0, 0, 0, 0};
  ets.tsa = {2, 2, 0, 0, 0, 0, 0, 0};
  // 1: within every number field's range (clamp_tgt_rate takes 0-1).
  const std::map<ValueKind, Value> sample = {{ValueKind::kNumber, Value(uint64_t{1})},
                                             {ValueKind::kDscpMap, Value(DscpMap{{26, 3}, {48, 6}})},
                                             {ValueKind::kEts, Value(ets)},
                                             {ValueKind::kPfc, Value(Pfc{0x08, 7})},
                                             {ValueKind::kBuffer, Value(PortBuffer{{0, 0, 0, 1, 0, 0, 0, 0},
                                                                                   {262144, 131072, 0, 0, 0, 0, 0, 0},
                                                                                   0})}};
  std::map<ValueKind, const FieldSpec*> one_of_kind;  // writes the sample of its kind
  for (const FieldSpec& spec : Fields()) one_of_kind.try_emplace(spec.kind, &spec);
  ASSERT_EQ(one_of_kind.size(), sample.size());
  for (const FieldSpec& spec : Fields()) {
    for (const auto& [kind, value] : sample) {
      roced::v1::PriorValue p;
      p.set_field(spec.path);
      one_of_kind.at(kind)->to_prior(value, &p);
      std::optional<Value> back = spec.from_prior(p);
      if (kind == spec.kind) {
        EXPECT_EQ(back, std::optional<Value>(value)) << spec.path;
        EXPECT_NE(Render(value, spec.field), "?") << spec.path;
      } else {
        EXPECT_EQ(back, std::nullopt) << spec.path << " took a value of another kind";
      }
    }
    EXPECT_EQ(Render(Value(std::monostate{}), spec.field), "(unknown)");
  }
}

// --- apply, verify, rollback ------------------------------------------------

roced::v1::NodeConfig Config(const std::string& body) {
  std::vector<roced::v1::ValidationIssue> issues;
  auto d = model::DecodeYamlConfig("apiVersion: roced/v1\nkind: NodeConfig\n" + body, &issues);
  EXPECT_TRUE(d.ok()) << model::FormatIssues("cfg", issues);
  return d->config;
}

struct Fixture {
  FakeNodeIoForTest io;
  std::vector<Target> targets;
  roced::v1::NodeConfig config;
  Plan plan;
};

// eth0 with DCB, ECN and a RoCE device; 2 MiB pool with 0 pages.
Fixture Make(const std::string& body) {
  Fixture f;
  InterfaceObserved o;
  o.mtu = 1500;
  o.dscp = DscpMap{};
  o.ets = Ets{};
  o.pfc = Pfc{};
  o.ecn_np = 0;
  o.ecn_rp = 0;
  o.roce_mode = roced::v1::ROCE_MODE_V1;
  o.roce_tos = 0;
  f.io.interfaces["eth0"] = o;
  f.io.hugepages[{2048, -1}] = 0;
  f.config = Config(body);
  f.targets = {Target{0, "eth0", "rxe0", 1}};
  f.plan = ComputePlan(f.config, f.targets, ObserveAll(&f.io, f.config, f.targets));
  return f;
}

const char kFull[] =
    "hugepages: [{size: 2Mi, count: 64}]\n"
    "interfaces:\n  - match: {netdev: eth0}\n    mtu: 4200\n"
    "    qos:\n      trust: dscp\n      dscp_to_priority: {26: 3}\n      pfc: {priorities: [3]}\n"
    "      ecn: {np_priorities: [3], rp_priorities: [3]}\n"
    "    roce: {default_mode: v2, default_tos: 106}\n";

std::vector<roced::v1::StepOutcome> Outcomes(const roced::v1::ApplyResult& r) {
  std::vector<roced::v1::StepOutcome> out;
  for (const auto& s : r.steps()) out.push_back(s.outcome());
  return out;
}

TEST(Apply, StepsRunInTheFixedOrder) {
  Fixture f = Make(kFull);
  std::vector<Field> fields;
  for (const Step& s : f.plan.steps) fields.push_back(s.field);
  EXPECT_EQ(fields, (std::vector<Field>{Field::kHugepages, Field::kMtu, Field::kDscp, Field::kPfc,
                                        Field::kEcnNp, Field::kEcnRp, Field::kRoceMode, Field::kRoceTos}));
}

TEST(Apply, FailingPfcWriteRollsBackEverythingBeforeIt) {
  Fixture f = Make(kFull);
  InterfaceObserved before = f.io.interfaces["eth0"];
  f.io.fail[Field::kPfc] = absl::InternalError("eth0: set PFC refused by the driver: Input/output error");
  auto r = ApplyPlan(f.plan, f.targets, &f.io, {2, absl::ZeroDuration()});
  EXPECT_FALSE(r.success());
  EXPECT_TRUE(r.rolled_back());
  using O = roced::v1::StepOutcome;
  EXPECT_EQ(Outcomes(r), (std::vector<O>{roced::v1::STEP_OUTCOME_ROLLED_BACK, roced::v1::STEP_OUTCOME_ROLLED_BACK,
                                         roced::v1::STEP_OUTCOME_ROLLED_BACK, roced::v1::STEP_OUTCOME_FAILED,
                                         roced::v1::STEP_OUTCOME_SKIPPED, roced::v1::STEP_OUTCOME_SKIPPED,
                                         roced::v1::STEP_OUTCOME_SKIPPED, roced::v1::STEP_OUTCOME_SKIPPED}));
  EXPECT_THAT(r.steps(3).error(), ::testing::HasSubstr("refused by the driver"));
  // The node is exactly as before.
  const InterfaceObserved& after = f.io.interfaces["eth0"];
  EXPECT_EQ(after.mtu, before.mtu);
  EXPECT_EQ(after.dscp, before.dscp);
  EXPECT_EQ(after.pfc, before.pfc);
  EXPECT_EQ(f.io.hugepages[(HugepagePool{2048, -1})], 0u);
}

// Firmware DCBX: taking host mode is the first DCB step, and a failure
// after it hands the port back to the firmware with the rest.
TEST(Apply, FailedApplyAfterTakingHostModeHandsDcbxBackToTheFirmware) {
  Fixture f = Make(
      "interfaces:\n  - match: {netdev: eth0}\n    qos:\n      dcbx_mode: host\n      trust: dscp\n"
      "      dscp_to_priority: {26: 3}\n      pfc: {priorities: [3]}\n");
  f.io.interfaces["eth0"].dcbx_host = false;
  f.plan = ComputePlan(f.config, f.targets, ObserveAll(&f.io, f.config, f.targets));
  ASSERT_EQ(f.plan.steps.size(), 3u);
  EXPECT_EQ(f.plan.steps[0].field, Field::kDcbxMode);
  f.io.fail[Field::kPfc] = absl::InternalError("eth0: set PFC refused by the driver: Input/output error");
  auto r = ApplyPlan(f.plan, f.targets, &f.io, {2, absl::ZeroDuration()});
  EXPECT_TRUE(r.rolled_back());
  EXPECT_EQ(f.io.interfaces["eth0"].dcbx_host, false);
  EXPECT_EQ(f.io.interfaces["eth0"].dscp, DscpMap{});
}

TEST(Apply, FirmwareDcbxWithoutHostModeWritesNoDcbField) {
  Fixture f = Make(kFull);
  f.io.interfaces["eth0"].dcbx_host = false;
  f.plan = ComputePlan(f.config, f.targets, ObserveAll(&f.io, f.config, f.targets));
  for (const Step& s : f.plan.steps) EXPECT_FALSE(Spec(s.field).dcbx_owned) << FieldPath(s.field);
  int reported = 0;
  for (const auto& fs : f.plan.fields) {
    if (fs.field() == "qos.pfc" || fs.field() == "qos.dscp_to_priority") {
      ++reported;
      EXPECT_EQ(fs.sync(), roced::v1::FIELD_SYNC_UNSUPPORTED);
      EXPECT_THAT(fs.message(), ::testing::HasSubstr("qos.dcbx_mode: host"));
    }
  }
  EXPECT_EQ(reported, 2);
}

// The new QoS knobs: buffers (DCB), PFC prevention (ethtool), DCQCN (sysfs).
const char kKnobs[] =
    "interfaces:\n  - match: {netdev: eth0}\n    qos:\n      pfc: {priorities: [3]}\n"
    "      buffers: {priority_to_buffer: [0,0,0,1,0,0,0,0]}\n"
    "      pfc_prevention: {auto: true}\n"
    "      dcqcn: {cnp_dscp: 46, rpg_ai_rate: 10}\n";

Fixture MakeKnobs() {
  Fixture f;
  InterfaceObserved o;
  o.pfc = Pfc{};
  o.buffer = PortBuffer{{}, {262144, 131072, 0, 0, 0, 0, 0, 0}, 524288};
  o.pfc_prevention = 0;
  o.dcqcn = {{"cnp_dscp", 48}, {"rpg_ai_rate", 5}, {"rpg_hai_rate", 50}};
  f.io.interfaces["eth0"] = o;
  f.config = Config(kKnobs);
  f.targets = {Target{0, "eth0", "", 1}};
  f.plan = ComputePlan(f.config, f.targets, ObserveAll(&f.io, f.config, f.targets));
  return f;
}

TEST(Apply, BuffersPreventionAndDcqcnApplyInOrderAndKeepWhatTheConfigLeaves) {
  Fixture f = MakeKnobs();
  std::vector<Field> fields;
  for (const Step& s : f.plan.steps) fields.push_back(s.field);
  EXPECT_EQ(fields, (std::vector<Field>{Field::kPfc, Field::kPortBuffer, Field::kPfcPrevention, Field::kCnpDscp,
                                        Field::kRpgAiRate}));
  auto r = ApplyPlan(f.plan, f.targets, &f.io, {2, absl::ZeroDuration()});
  ASSERT_TRUE(r.success()) << r.DebugString();
  const InterfaceObserved& now = f.io.interfaces["eth0"];
  EXPECT_EQ(now.buffer->prio2buffer, (std::array<uint8_t, 8>{0, 0, 0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(now.buffer->size[0], 262144u) << "sizes the config leaves out stay the node's";
  EXPECT_EQ(now.dcqcn.at("rpg_hai_rate"), 50u) << "a parameter the config leaves out is not written";
  // mlx5 reads "auto" back as its 100 ms: that verified, and is in sync now.
  EXPECT_EQ(now.pfc_prevention, std::optional<uint16_t>(100));
  EXPECT_TRUE(ComputePlan(f.config, f.targets, ObserveAll(&f.io, f.config, f.targets)).empty());
}

TEST(Apply, RefusedDcqcnWriteRollsBackTheBuffersAndPrevention) {
  Fixture f = MakeKnobs();
  InterfaceObserved before = f.io.interfaces["eth0"];
  f.io.fail[Field::kRpgAiRate] = absl::PermissionDeniedError("write rpg_ai_rate: Operation not permitted");
  auto r = ApplyPlan(f.plan, f.targets, &f.io, {2, absl::ZeroDuration()});
  EXPECT_FALSE(r.success());
  EXPECT_TRUE(r.rolled_back());
  using O = roced::v1::StepOutcome;
  EXPECT_EQ(Outcomes(r), (std::vector<O>{roced::v1::STEP_OUTCOME_ROLLED_BACK, roced::v1::STEP_OUTCOME_ROLLED_BACK,
                                         roced::v1::STEP_OUTCOME_ROLLED_BACK, roced::v1::STEP_OUTCOME_ROLLED_BACK,
                                         roced::v1::STEP_OUTCOME_FAILED}));
  const InterfaceObserved& after = f.io.interfaces["eth0"];
  EXPECT_EQ(after.pfc, before.pfc);
  EXPECT_EQ(after.buffer, before.buffer);
  EXPECT_EQ(after.pfc_prevention, before.pfc_prevention);
  EXPECT_EQ(after.dcqcn, before.dcqcn);
}

TEST(Apply, ExplicitTimeoutIsNotSatisfiedByTheAutoReading) {
  Fixture f = MakeKnobs();
  f.config = Config("interfaces:\n  - match: {netdev: eth0}\n    qos: {pfc_prevention: {timeout_ms: 200}}\n");
  f.io.interfaces["eth0"].pfc_prevention = 100;
  Plan plan = ComputePlan(f.config, f.targets, ObserveAll(&f.io, f.config, f.targets));
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(RenderPlan(plan), "eth0 qos.pfc_prevention: 100 ms -> 200 ms\n");
}

TEST(Apply, WriteTheDriverIgnoresIsNotVerifiedAndRolledBack) {
  Fixture f = Make(kFull);
  f.io.ignore[Field::kEcnRp] = true;
  auto r = ApplyPlan(f.plan, f.targets, &f.io, {3, absl::ZeroDuration()});
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.steps(5).outcome(), roced::v1::STEP_OUTCOME_NOT_VERIFIED);
  EXPECT_THAT(r.steps(5).error(), ::testing::HasSubstr("read back [], wanted [3]"));
  EXPECT_EQ(f.io.interfaces["eth0"].ecn_np, std::optional<uint8_t>(0));
  EXPECT_EQ(f.io.interfaces["eth0"].mtu, std::optional<uint32_t>(1500));
}

TEST(Apply, FailureOfTheFirstStepChangesNothing) {
  Fixture f = Make(kFull);
  f.io.fail[Field::kHugepages] = absl::PermissionDeniedError("open nr_hugepages: Permission denied");
  auto r = ApplyPlan(f.plan, f.targets, &f.io, {2, absl::ZeroDuration()});
  EXPECT_FALSE(r.success());
  EXPECT_EQ(f.io.writes, 1);  // nothing after the failed step was written
}

TEST(Apply, PartialHugepagesAreReportedWithCountsAndDoNotRollBack) {
  Fixture f = Make(kFull);
  f.io.hugepage_limit[{2048, -1}] = 40;
  auto r = ApplyPlan(f.plan, f.targets, &f.io, {2, absl::ZeroDuration()});
  EXPECT_TRUE(r.success());
  EXPECT_EQ(r.steps(0).outcome(), roced::v1::STEP_OUTCOME_PARTIAL);
  EXPECT_EQ(r.steps(0).error(), "wanted 64 pages, the kernel reserved 40");
  EXPECT_EQ(r.steps(0).code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(r.steps(1).outcome(), roced::v1::STEP_OUTCOME_APPLIED);
  EXPECT_EQ(r.steps(1).code(), 0);
}

// A partial reservation is still a change to the node: when a later step
// fails, the pages it reserved are given back like every other step.
TEST(Apply, PartialHugepagesAreRolledBackWhenALaterStepFails) {
  Fixture f = Make(kFull);
  f.io.hugepage_limit[{2048, -1}] = 40;
  f.io.fail[Field::kPfc] = absl::InternalError("eth0: set PFC refused by the driver");
  auto r = ApplyPlan(f.plan, f.targets, &f.io, {2, absl::ZeroDuration()});
  EXPECT_FALSE(r.success());
  EXPECT_TRUE(r.rolled_back());
  EXPECT_EQ(r.steps(0).outcome(), roced::v1::STEP_OUTCOME_ROLLED_BACK);
  EXPECT_EQ(r.steps(3).outcome(), roced::v1::STEP_OUTCOME_FAILED);
  EXPECT_EQ(r.steps(3).code(), static_cast<int>(absl::StatusCode::kInternal));
  EXPECT_EQ(f.io.hugepages[(HugepagePool{2048, -1})], std::optional<uint64_t>(0));
}

TEST(Apply, RollbackFailureIsReported) {
  Fixture f = Make(kFull);
  f.io.fail[Field::kRoceTos] = absl::UnavailableError("configfs busy");
  // After the forward pass fails, make the MTU rollback fail too.
  struct FailMtuOnRollback : FakeNodeIoForTest {
    int mtu_writes = 0;
    absl::Status SetMtu(const Target& t, uint32_t mtu) override {
      if (++mtu_writes == 2) return absl::InternalError("link busy");
      return FakeNodeIoForTest::SetMtu(t, mtu);
    }
  } io;
  io.interfaces = f.io.interfaces;
  io.hugepages = f.io.hugepages;
  io.fail = f.io.fail;
  auto r = ApplyPlan(f.plan, f.targets, &io, {2, absl::ZeroDuration()});
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.steps(1).outcome(), roced::v1::STEP_OUTCOME_FAILED);
  EXPECT_THAT(r.steps(1).error(), ::testing::HasSubstr("rollback failed: link busy"));
}

// --- the port buffers as mlx5 holds and checks them ---------------------------

// mlx5 as far as the port buffers go (en/port_buffer.c, en_dcbnl.c): sizes
// kept in 128-byte cells (read back rounded down); a buffer a PFC priority
// maps to refused below `min_lossless` with ENOMEM, nothing written by that
// setbuffer; in manual mode the same for a PFC write, but only after pfc_en
// is written and the link toggled (mlx5e_dcbnl_ieee_setpfc).
struct Mlx5BufferNode : FakeNodeIoForTest {
  uint32_t min_lossless = 45786;  // the lab's test NIC: 100 Gb/s, 7 m, MTU 1500, max_mtu 9978
  int pfc_writes = 0;
  int link_toggles = 0;
  int buffer_writes = 0;

  bool TooSmall(const PortBuffer& b, uint8_t pfc_en) const {
    for (int p = 0; p < 8; ++p) {
      if ((pfc_en & (1u << p)) != 0 && b.size[b.prio2buffer[p]] < min_lossless) return true;
    }
    return false;
  }
  absl::Status SetPfc(const Target& t, const Pfc& pfc) override {
    ++pfc_writes;
    if (interfaces[t.netdev].pfc->enabled != pfc.enabled) ++link_toggles;
    if (absl::Status s = FakeNodeIoForTest::SetPfc(t, pfc); !s.ok()) return s;
    const std::optional<PortBuffer>& b = interfaces[t.netdev].buffer;
    if (b && TooSmall(*b, pfc.enabled)) {
      return absl::InternalError("eth0: set PFC refused by the driver: Cannot allocate memory");
    }
    return absl::OkStatus();
  }
  absl::Status SetBuffer(const Target& t, const PortBuffer& want) override {
    ++buffer_writes;
    if (TooSmall(want, interfaces[t.netdev].pfc->enabled)) {
      return absl::InternalError("eth0: set port buffer refused by the driver: Cannot allocate memory");
    }
    PortBuffer kept = want;
    for (uint32_t& size : kept.size) size = size / 128 * 128;
    return FakeNodeIoForTest::SetBuffer(t, kept);
  }
};

// eth0 at MTU 1500, PFC off (delay 7), buffers 256 KiB and 128 KiB of a
// 512 KiB port, every priority in buffer 0; `body` the interface's config.
struct BufferCase {
  Mlx5BufferNode io;
  std::vector<Target> targets{Target{0, "eth0", "", 1}};
  roced::v1::NodeConfig config;
  Plan plan;
  explicit BufferCase(const std::string& body) {
    InterfaceObserved o;
    o.mtu = 1500;
    o.pfc = Pfc{0, 7};
    o.buffer = PortBuffer{{}, {262144, 131072, 0, 0, 0, 0, 0, 0}, 524288};
    io.interfaces["eth0"] = o;
    Replan(body);
  }
  void Replan(const std::string& body) {
    config = Config("interfaces:\n  - match: {netdev: eth0}\n" + body);
    plan = ComputePlan(config, targets, ObserveAll(&io, config, targets));
  }
};

// bnxt_en's PFC rides on its ETS (bnxt_hwrm_queue_pfc_cfg): refused before
// any write when no ETS was ever set and the config sets none, and when the
// PFC priorities span more traffic classes than its lossless queues
// (pfc_cap); with the ETS the plan writes first, it goes ahead.
TEST(DriverRules, BnxtPfcNeedsAnEtsAndAtMostPfcCapLosslessClasses) {
  BufferCase c("    qos:\n      pfc: {priorities: [3]}\n");
  InterfaceObserved& o = c.io.interfaces["eth0"];
  o.driver = "bnxt_en";
  o.buffer.reset();
  o.pfc = Pfc{0, 0};
  o.pfc_cap = 2;
  o.ets = Ets{};  // host mode before any setets: zeros
  c.Replan("    qos:\n      pfc: {priorities: [3]}\n");
  ASSERT_EQ(c.plan.steps.size(), 1u);
  auto r = ApplyPlan(c.plan, c.targets, &c.io, {2, absl::ZeroDuration()});
  EXPECT_FALSE(r.success());
  EXPECT_EQ(c.io.writes, 0);
  EXPECT_THAT(r.steps(0).error(), ::testing::HasSubstr("bnxt_en takes PFC only once an ETS configuration is set"));
  const std::string ets3 =
      "      ets: {priority_to_tc: [0,1,2,3,0,0,0,0], tc_bandwidth: [25,25,25,25,0,0,0,0], "
      "tsa: [ets,ets,ets,ets,strict,strict,strict,strict]}\n";
  c.Replan("    qos:\n      pfc: {priorities: [1, 2, 3]}\n" + ets3);
  r = ApplyPlan(c.plan, c.targets, &c.io, {2, absl::ZeroDuration()});
  EXPECT_FALSE(r.success());
  EXPECT_EQ(c.io.writes, 0);
  EXPECT_THAT(r.steps(1).error(), ::testing::HasSubstr("qos.pfc puts 3 traffic classes on lossless queues; bnxt_en has 2"));
  c.Replan("    qos:\n      pfc: {priorities: [2, 3]}\n" + ets3);
  r = ApplyPlan(c.plan, c.targets, &c.io, {2, absl::ZeroDuration()});
  EXPECT_TRUE(r.success()) << r.DebugString();
}

// ice's PFC delay is the port's register: a configured delay is not
// compared, so it cannot hold convergence back.
TEST(DriverRules, IcePfcDelayIsThePortsOwn) {
  BufferCase c("    qos:\n      pfc: {priorities: [3]}\n");
  InterfaceObserved& o = c.io.interfaces["eth0"];
  o.driver = "ice";
  o.buffer.reset();
  o.pfc = Pfc{0x08, 5};
  c.Replan("    qos:\n      pfc: {priorities: [3], delay: 40}\n");
  EXPECT_TRUE(c.plan.steps.empty()) << RenderPlan(c.plan);
  o.driver = "mlx5_core";
  c.Replan("    qos:\n      pfc: {priorities: [3], delay: 40}\n");
  EXPECT_EQ(c.plan.steps.size(), 1u) << "mlx5 keeps a delay it is given";
}

TEST(Buffers, SizesReadBackRoundedDownToACellVerifyAndStayInSync) {
  BufferCase c("    qos:\n      pfc: {priorities: [3]}\n"
               "      buffers: {priority_to_buffer: [0,0,0,1,0,0,0,0], size_bytes: [200000,300000,0,0,0,0,0,0]}\n");
  ASSERT_EQ(c.plan.steps.size(), 2u);
  auto r = ApplyPlan(c.plan, c.targets, &c.io, {2, absl::ZeroDuration()});
  ASSERT_TRUE(r.success()) << r.DebugString();
  EXPECT_EQ(c.io.interfaces["eth0"].buffer->size[0], 199936u);  // 1562 cells
  EXPECT_EQ(c.io.interfaces["eth0"].buffer->size[1], 299904u);  // 2343 cells
  EXPECT_EQ(c.io.buffer_writes, 1) << "verified at the first read-back";
  Plan again = ComputePlan(c.config, c.targets, ObserveAll(&c.io, c.config, c.targets));
  EXPECT_TRUE(again.empty()) << RenderPlan(again);
  // A cell short is not what was asked for.
  c.io.interfaces["eth0"].buffer->size[0] = 199936 - 128;
  again = ComputePlan(c.config, c.targets, ObserveAll(&c.io, c.config, c.targets));
  EXPECT_EQ(RenderPlan(again),
            "eth0 qos.buffers: prio_buffer [0,0,0,1,0,0,0,0] size [199808,299904,0,0,0,0,0,0] of 524288 -> "
            "prio_buffer [0,0,0,1,0,0,0,0] size [200000,300000,0,0,0,0,0,0] of 524288\n");
}

TEST(Buffers, LosslessBufferBelowTheMinimumIsRefusedBeforeAnyWrite) {
  BufferCase c("    qos:\n      pfc: {priorities: [3]}\n"
               "      buffers: {priority_to_buffer: [0,0,0,1,0,0,0,0], size_bytes: [262144,20000,0,0,0,0,0,0]}\n");
  ASSERT_EQ(c.plan.steps.size(), 2u);  // PFC, then the buffers
  const InterfaceObserved before = c.io.interfaces["eth0"];
  auto r = ApplyPlan(c.plan, c.targets, &c.io, {2, absl::ZeroDuration()});
  EXPECT_FALSE(r.success());
  EXPECT_FALSE(r.rolled_back());
  EXPECT_EQ(c.io.writes, 0) << "nothing written, not even the PFC step before it";
  EXPECT_EQ(c.io.pfc_writes + c.io.buffer_writes, 0);
  EXPECT_EQ(Outcomes(r), (std::vector<roced::v1::StepOutcome>{roced::v1::STEP_OUTCOME_SKIPPED,
                                                                roced::v1::STEP_OUTCOME_FAILED}));
  EXPECT_EQ(r.steps(1).code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  // xoff = (301 + 216 * 7 / 100) * 40000 / 1000 + 272 * 1500 / 100 = 12640 + 4080
  EXPECT_EQ(r.steps(1).error(),
            "eth0: qos.buffers.size_bytes[1] = 20000 bytes is below the lossless minimum 26064 (xoff 16720 + MTU "
            "9216 + one 128-byte cell) for priority 3's buffer: mlx5's xoff for a 7 m cable (the PFC delay) and MTU "
            "1500 at 40 Gb/s, its lowest (a faster port needs more); nothing was written");
  EXPECT_EQ(c.io.interfaces["eth0"].pfc, before.pfc);
  EXPECT_EQ(c.io.interfaces["eth0"].buffer, before.buffer);
}

// The minimum takes what the plan writes before the buffers (MTU, the PFC
// delay as the cable length) and PFC from the node when the config leaves
// it; the minimum itself passes, one byte less does not; a buffer no PFC
// priority maps to may be small.
TEST(Buffers, MinimumFollowsThePlannedMtuAndDelayAndTheNodesPfc) {
  // xoff = (301 + 216 * 100 / 100) * 40 + 272 * 9000 / 100 = 20680 + 24480;
  // + max(9000, 9216) + 128 = 54504.
  const std::string wants = "    mtu: 9000\n    qos:\n      pfc: {priorities: [3], delay: 100}\n"
                            "      buffers: {priority_to_buffer: [0,0,0,1,0,0,0,0], size_bytes: [1000,";
  BufferCase c(wants + "54503,0,0,0,0,0,0]}\n");
  auto r = ApplyPlan(c.plan, c.targets, &c.io, {2, absl::ZeroDuration()});
  ASSERT_FALSE(r.success());
  EXPECT_THAT(r.steps(2).error(), ::testing::HasSubstr("size_bytes[1] = 54503 bytes is below the lossless minimum "
                                                       "54504 (xoff 45160 + MTU 9216 + one 128-byte cell)"));
  EXPECT_THAT(r.steps(2).error(), ::testing::HasSubstr("a 100 m cable (the PFC delay) and MTU 9000"));
  c.io.min_lossless = 0;
  c.Replan(wants + "54504,0,0,0,0,0,0]}\n");
  r = ApplyPlan(c.plan, c.targets, &c.io, {2, absl::ZeroDuration()});
  EXPECT_TRUE(r.success()) << r.DebugString();

  BufferCase node_pfc("    qos:\n      buffers: {priority_to_buffer: [0,0,0,0,1,0,0,0], "
                      "size_bytes: [300000,20000,0,0,0,0,0,0]}\n");
  node_pfc.io.interfaces["eth0"].pfc = Pfc{0x10, 7};
  node_pfc.Replan("    qos:\n      buffers: {priority_to_buffer: [0,0,0,0,1,0,0,0], "
                  "size_bytes: [300000,20000,0,0,0,0,0,0]}\n");
  r = ApplyPlan(node_pfc.plan, node_pfc.targets, &node_pfc.io, {2, absl::ZeroDuration()});
  EXPECT_THAT(r.steps(0).error(), ::testing::HasSubstr("size_bytes[1] = 20000 bytes is below the lossless minimum "
                                                       "26064 (xoff 16720 + MTU 9216 + one 128-byte cell) for "
                                                       "priority 4's buffer"));
  BufferCase lossy("    qos:\n      pfc: {priorities: [3]}\n      buffers: {priority_to_buffer: [0,0,0,0,0,0,0,0], "
                   "size_bytes: [300000,20000,0,0,0,0,0,0]}\n");
  r = ApplyPlan(lossy.plan, lossy.targets, &lossy.io, {2, absl::ZeroDuration()});
  EXPECT_TRUE(r.success()) << "buffer 1 is lossy: " << r.DebugString();
}

// mlx5 in manual buffer mode refuses a PFC write with ENOMEM after writing
// pfc_en and toggling the link, when a buffer the new PFC makes lossless is
// too small (a layout left by an earlier apply; roced's check runs on
// buffer steps). The apply's rollback writes the old PFC back: one PFC
// write and one link toggle each way, the node as before.
TEST(Buffers, LateEnomemFromPfcIsRolledBackWithOneToggleEachWay) {
  BufferCase c("    qos:\n      pfc: {priorities: [3]}\n");
  c.io.interfaces["eth0"].buffer = PortBuffer{{0, 0, 0, 1, 0, 0, 0, 0}, {262144, 20096, 0, 0, 0, 0, 0, 0}, 524288};
  c.Replan("    qos:\n      pfc: {priorities: [3]}\n");
  const InterfaceObserved before = c.io.interfaces["eth0"];
  auto r = ApplyPlan(c.plan, c.targets, &c.io, {2, absl::ZeroDuration()});
  EXPECT_FALSE(r.success());
  EXPECT_TRUE(r.rolled_back());
  EXPECT_EQ(r.steps(0).outcome(), roced::v1::STEP_OUTCOME_FAILED);
  EXPECT_THAT(r.steps(0).error(), ::testing::HasSubstr("Cannot allocate memory"));
  EXPECT_EQ(c.io.pfc_writes, 2) << "the failed write and the rollback's";
  EXPECT_EQ(c.io.link_toggles, 2) << "one toggle each way";
  EXPECT_EQ(c.io.interfaces["eth0"].pfc, before.pfc);
  EXPECT_EQ(c.io.interfaces["eth0"].buffer, before.buffer);
}

// The driver's minimum can be above roced's (a port faster than 40 Gb/s,
// max_mtu above the MTU): the buffer step then fails with ENOMEM after the
// PFC step, and the rollback undoes PFC, one toggle each way.
TEST(Buffers, LateEnomemFromTheBufferStepRollsPfcBack) {
  BufferCase c("    qos:\n      pfc: {priorities: [3]}\n"
               "      buffers: {priority_to_buffer: [0,0,0,1,0,0,0,0], size_bytes: [262144,30000,0,0,0,0,0,0]}\n");
  const InterfaceObserved before = c.io.interfaces["eth0"];
  auto r = ApplyPlan(c.plan, c.targets, &c.io, {2, absl::ZeroDuration()});
  EXPECT_FALSE(r.success());
  EXPECT_EQ(Outcomes(r), (std::vector<roced::v1::StepOutcome>{roced::v1::STEP_OUTCOME_ROLLED_BACK,
                                                                roced::v1::STEP_OUTCOME_FAILED}));
  EXPECT_EQ(c.io.pfc_writes, 2);
  EXPECT_EQ(c.io.link_toggles, 2);
  EXPECT_EQ(c.io.buffer_writes, 1) << "the refused one; nothing to put back";
  EXPECT_EQ(c.io.interfaces["eth0"].pfc, before.pfc);
  EXPECT_EQ(c.io.interfaces["eth0"].buffer, before.buffer);
}

// Validation, before any node: a PFC priority on a buffer of 0 bytes can
// never be lossless (mlx5 needs xoff + MTU + one cell): an error naming the
// priority and the buffer. Without PFC on it, the warning as before.
TEST(Buffers, ValidationRefusesAPfcPriorityOnAnEmptyBuffer) {
  auto issues_of = [](const std::string& pfc) {
    std::vector<roced::v1::ValidationIssue> issues;
    auto d = model::DecodeYamlConfig("apiVersion: roced/v1\nkind: NodeConfig\ninterfaces:\n"
                                     "  - match: {netdev: eth0}\n    qos:\n" + pfc +
                                         "      buffers: {priority_to_buffer: [0,0,0,2,0,0,0,0], "
                                         "size_bytes: [262144,131072,0,0,0,0,0,0]}\n",
                                     &issues);
    EXPECT_TRUE(d.ok());
    model::ValidateConfig(d->config, nullptr, &issues);
    return issues;
  };
  std::vector<roced::v1::ValidationIssue> issues = issues_of("      pfc: {priorities: [3]}\n");
  ASSERT_TRUE(model::HasErrors(issues));
  EXPECT_THAT(model::ErrorSummary(issues),
              ::testing::HasSubstr("interfaces[0].qos.buffers.priority_to_buffer[3]: priority 3 is mapped to buffer "
                                   "2, whose size_bytes is 0, but PFC is enabled on it"));
  issues = issues_of("      pfc: {priorities: [4]}\n");
  EXPECT_FALSE(model::HasErrors(issues));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].severity(), roced::v1::SEVERITY_WARNING);
}

TEST(Plan, UnknownInterfaceIsAnErrorNamingTheField) {
  auto config = Config("interfaces:\n  - match: {netdev: eth0}\n  - match: {rdma_device: mlx5_9}\n");
  auto t = ResolveTargets(config, {}, [](const std::string& nd) { return nd == "eth0"; });
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "interfaces[1].match.rdma_device: no RDMA device 'mlx5_9' on this node");
}

TEST(Plan, UnsupportedControlsAreReportedNotPlanned) {
  FakeNodeIoForTest io;
  io.interfaces["veth0"].mtu = 1500;  // no DCB, no ECN
  auto config = Config("interfaces:\n  - match: {netdev: veth0}\n    qos: {pfc: {priorities: [3]}}\n");
  std::vector<Target> targets = {Target{0, "veth0", "", 1}};
  Plan plan = ComputePlan(config, targets, ObserveAll(&io, config, targets));
  EXPECT_TRUE(plan.empty());
  ASSERT_EQ(plan.fields.size(), 1u);
  EXPECT_EQ(plan.fields[0].sync(), roced::v1::FIELD_SYNC_UNSUPPORTED);
  EXPECT_EQ(plan.fields[0].field(), "qos.pfc");
}

}  // namespace
}  // namespace roced::reconcile
