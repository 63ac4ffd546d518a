// The parts the agent coordinates, each on its own: the device diff behind
// device events, the AcceptedConfig an ApplyConfig or a confirm produces,
// the published state, and the restore queue over a real state directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "agent/config_lifecycle.h"
#include "agent/discovery.h"
#include "agent/published_state.h"
#include "agent/restore_queue.h"
#include "fake_node_io_for_test.h"
#include "test_util.h"
#include "util/fs.h"
#include "util/proto_time.h"

namespace roced::agent {
namespace {

roced::v1::RdmaDevice Device(const std::string& name, int ports, const std::string& driver = "rxe") {
  roced::v1::RdmaDevice d;
  d.set_name(name);
  d.set_driver(driver);
  for (int i = 0; i < ports; ++i) d.add_ports()->set_number(static_cast<uint32_t>(i + 1));
  return d;
}

TEST(DiffDevices, AddedChangedRemovedAndUnchanged) {
  std::vector<roced::v1::RdmaDevice> before = {Device("mlx5_0", 1), Device("mlx5_1", 1), Device("rxe0", 1)};
  std::vector<roced::v1::RdmaDevice> after = {Device("mlx5_0", 1), Device("mlx5_1", 2), Device("mlx5_2", 1, "mlx5_core")};
  auto events = DiffDevices(before, after, "netlink: link change");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].device().device(), "mlx5_1");
  EXPECT_EQ(events[0].device().kind(), roced::v1::DeviceEvent::KIND_CHANGED);
  EXPECT_EQ(events[0].device().detail(), "netlink: link change");
  EXPECT_EQ(events[1].device().device(), "mlx5_2");
  EXPECT_EQ(events[1].device().kind(), roced::v1::DeviceEvent::KIND_ADDED);
  EXPECT_EQ(events[1].device().detail(), "1 port(s), driver mlx5_core");
  EXPECT_EQ(events[2].device().device(), "rxe0");
  EXPECT_EQ(events[2].device().kind(), roced::v1::DeviceEvent::KIND_REMOVED);
  EXPECT_TRUE(DiffDevices(after, after, "periodic").empty());
}

roced::v1::PriorValue Prior(const std::string& netdev, uint64_t mtu) {
  roced::v1::PriorValue p;
  p.set_field("mtu");
  p.set_object(netdev);
  p.set_netdev(netdev);
  p.set_number(mtu);
  return p;
}

TEST(AcceptFromApply, PermanentAndProvisional) {
  roced::v1::AcceptedConfig current;
  current.set_generation(4);
  current.set_source(roced::v1::CONFIG_SOURCE_FILE);
  current.set_file_digest("abc");
  current.mutable_config()->set_api_version("roced/v1");
  roced::v1::NodeConfig next_config;
  next_config.set_api_version("roced/v1");
  next_config.add_interfaces()->set_mtu(9000);
  const absl::Time now = absl::FromUnixSeconds(1'000);

  roced::v1::AcceptedConfig permanent =
      AcceptFromApply(current, "/etc/roced/config.yaml", next_config, absl::ZeroDuration(), now, {Prior("eth0", 1500)});
  EXPECT_EQ(permanent.source(), roced::v1::CONFIG_SOURCE_GRPC);
  EXPECT_EQ(permanent.path(), "/etc/roced/config.yaml");
  EXPECT_EQ(permanent.file_digest(), "abc");
  EXPECT_FALSE(permanent.provisional());
  EXPECT_EQ(permanent.prior_size(), 0);

  roced::v1::AcceptedConfig first =
      AcceptFromApply(current, "", next_config, absl::Minutes(2), now, {Prior("eth0", 1500)});
  EXPECT_TRUE(first.provisional());
  EXPECT_EQ(util::FromProto(first.confirm_deadline()), now + absl::Minutes(2));
  EXPECT_TRUE(first.previous().interfaces().empty()) << "returns to the config in force";
  ASSERT_EQ(first.prior_size(), 1);

  // Stacked on a pending provisional config: it still returns to the config
  // before both, and each field keeps its oldest value.
  roced::v1::NodeConfig third = next_config;
  third.mutable_interfaces(0)->set_mtu(4200);
  roced::v1::AcceptedConfig second =
      AcceptFromApply(first, "", third, absl::Minutes(2), now, {Prior("eth0", 9000), Prior("eth1", 1500)});
  EXPECT_TRUE(second.previous().interfaces().empty());
  ASSERT_EQ(second.prior_size(), 2);
  for (const auto& p : second.prior()) {
    if (p.netdev() == "eth0") {
      EXPECT_EQ(p.number(), 1500u);
    }
  }

  roced::v1::AcceptedConfig confirmed = Confirmed(second);
  EXPECT_FALSE(confirmed.provisional());
  EXPECT_FALSE(confirmed.has_previous());
  EXPECT_FALSE(confirmed.has_confirm_deadline());
  EXPECT_EQ(confirmed.prior_size(), 0);
  EXPECT_TRUE(SameAccepted(second, confirmed));
  EXPECT_FALSE(SameAccepted(current, permanent));
}

TEST(PublishedState, DevicesHealthAndFields) {
  PublishedState state;
  EXPECT_FALSE(state.Snapshot().hostname().empty());
  EXPECT_TRUE(state.SwapDevices({Device("rxe0", 1)}).empty());
  auto before = state.SwapDevices({Device("rxe1", 1)});
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].name(), "rxe0");
  EXPECT_EQ(state.Devices()[0].name(), "rxe1");
  state.SetComponentHealth("discovery", false, "sysfs gone");
  state.SetComponentHealth("discovery", true, "");
  ASSERT_EQ(state.Snapshot().agent().components_size(), 1);
  EXPECT_TRUE(state.Snapshot().agent().components(0).healthy());
  state.SetConfigError("bad");
  roced::v1::AcceptedConfig a;
  a.set_generation(3);
  state.SetAccepted(a);
  EXPECT_EQ(state.Snapshot().config().generation(), 3u);
  EXPECT_TRUE(state.Snapshot().config().last_error().empty()) << "accepting clears the last error";
  roced::v1::FieldStatus f;
  f.set_field("mtu");
  state.SetFields(true, {f});
  EXPECT_TRUE(state.Snapshot().config().converged());
  EXPECT_EQ(state.Snapshot().fields_size(), 1);
}

TEST(RestoreQueue, WritesBackJournalsWhilePendingAndClearsOnSuccess) {
  const std::string dir = test_util::MakeTempDir();
  StateDir state_dir(dir);
  reconcile::FakeNodeIoForTest io;
  reconcile::InterfaceObserved eth0;
  eth0.mtu = 9000;
  io.interfaces["eth0"] = eth0;

  RestoreQueue queue(&state_dir);
  EXPECT_FALSE(queue.Run("nothing", &io));
  queue.Add("confirm-timeout rollback", {Prior("eth0", 1500)});
  EXPECT_EQ(queue.size(), 1u);
  ASSERT_TRUE(state_dir.LoadJournal()) << "pending values are journalled";

  // A restart before the values are back finds them again.
  RestoreQueue after_restart(&state_dir);
  after_restart.LoadAtStartup(std::nullopt);
  EXPECT_EQ(after_restart.size(), 1u);

  io.fail[reconcile::Field::kMtu] = absl::InternalError("link busy");
  auto failed = queue.Run("pass", &io);
  ASSERT_TRUE(failed);
  EXPECT_FALSE(failed->success());
  EXPECT_FALSE(queue.empty());
  EXPECT_TRUE(state_dir.LoadJournal());

  io.fail.clear();
  auto done = queue.Run("pass", &io);
  ASSERT_TRUE(done);
  EXPECT_TRUE(done->success());
  EXPECT_EQ(io.interfaces["eth0"].mtu, std::optional<uint32_t>(1500));
  EXPECT_TRUE(queue.empty());
  EXPECT_FALSE(state_dir.LoadJournal());
  std::filesystem::remove_all(dir);
}

TEST(RestoreQueue, AJournalWhoseApplyWasAcceptedIsDiscarded) {
  const std::string dir = test_util::MakeTempDir();
  StateDir state_dir(dir);
  ASSERT_TRUE(state_dir.WriteJournal(5, "ApplyConfig", {Prior("eth0", 1500)}).ok());
  roced::v1::AcceptedConfig persisted;
  persisted.set_generation(5);
  RestoreQueue queue(&state_dir);
  queue.LoadAtStartup(persisted);
  EXPECT_TRUE(queue.empty());
  EXPECT_FALSE(state_dir.LoadJournal());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace roced::agent

namespace roced::agent {
namespace {

TEST(StateDir, TemporaryFilesLeftByACrashAreRemovedAtStart) {
  const std::string dir = test_util::MakeTempDir();
  for (const char* name : {"accepted.json.tmp.4242", "apply-journal.json.tmp.17", "notes.tmp"}) {
    ASSERT_TRUE(util::WriteFileAtomic(dir + "/" + name, "{").ok());
  }
  StateDir state_dir(dir);
  EXPECT_FALSE(std::filesystem::exists(dir + "/accepted.json.tmp.4242"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/apply-journal.json.tmp.17"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/notes.tmp")) << "only the state dir's own temporaries go";
  std::filesystem::remove_all(dir);
}

TEST(StateDir, ConfigThatCannotBeWrittenAsJsonIsNotStorable) {
  roced::v1::AcceptedConfig ok;
  ok.set_generation(1);
  EXPECT_TRUE(StateDir::CheckStorable(ok).ok());
  roced::v1::AcceptedConfig bad = ok;
  bad.mutable_accepted_at()->set_seconds(int64_t{1} << 40);  // past year 9999
  absl::Status s = StateDir::CheckStorable(bad);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("cannot be stored"));
}

}  // namespace
}  // namespace roced::agent
