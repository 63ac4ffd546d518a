// The parts the agent coordinates, each on its own: the device diff behind
// device events, the AcceptedConfig an ApplyConfig or a confirm produces,
// the published state, and the restore queue over a real state directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "agent/core/config_lifecycle.h"
#include "agent/core/describe.h"
#include "agent/core/discovery.h"
#include "agent/runtimes/mesh_runtime.h"
#include "fixture_daemon.h"
#include "hal/pressure.h"
#include "prometheus/text_serializer.h"
#include "agent/core/published_state.h"
#include "agent/core/restore_queue.h"
#include "fake_node_io_for_test.h"
#include "test_util.h"
#include "util/fs.h"
#include "util/proto_time.h"
#include "util/resolve.h"

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
  EXPECT_EQ(events[2].device().detail(), "gone from sysfs (netlink: link change)");
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

// Readers that poll every second (the counters' refresh, the probe
// scheduler) copy the state only when Version() moved: every change they
// could see must move it, and a component re-reporting the same health
// (every pass) must not.
TEST(PublishedState, VersionMovesWithEveryVisibleChangeOnly) {
  PublishedState state;
  uint64_t v = state.Version();
  auto moved = [&](const char* what) {
    const uint64_t now = state.Version();
    EXPECT_GT(now, v) << what << " must move the version";
    v = now;
  };
  state.SwapDevices({Device("rxe0", 1)});
  moved("SwapDevices");
  state.SwapDevices({Device("rxe0", 1)});
  EXPECT_EQ(state.Version(), v) << "the same devices again (every discovery pass swaps)";
  state.SwapDevices({Device("rxe0", 2)});
  moved("a device with a different port");
  state.SetComponentHealth("counters", true, "");
  moved("a new component");
  state.SetComponentHealth("counters", true, "");
  EXPECT_EQ(state.Version(), v) << "the same health again (only last_success moves)";
  state.SetComponentHealth("counters", false, "sysfs gone");
  moved("a component turning unhealthy");
  state.SetComponentHealth("counters", false, "sysfs still gone");
  moved("a component's new message");
  state.AddWarning("w");
  moved("AddWarning");
  state.AddWarning("w");
  EXPECT_EQ(state.Version(), v) << "a warning already there is not added again";
  roced::v1::AcceptedConfig a;
  a.set_generation(2);
  a.mutable_config()->mutable_probes()->add_peers()->set_name("node2");
  state.SetAccepted(a);
  moved("SetAccepted");
  state.SetConfigError("bad");
  moved("SetConfigError");
  state.ClearConfigError();
  moved("ClearConfigError");
  state.SetConfirmDeadline(google::protobuf::Timestamp());
  moved("SetConfirmDeadline");
  state.ClearProvisional();
  moved("ClearProvisional");
  state.SetFields(true, {});
  moved("SetFields");
  state.SetFields(true, {});
  EXPECT_EQ(state.Version(), v) << "the same reconcile outcome again (every pass reports one)";
  roced::v1::FieldStatus f;
  f.set_object("eth0");
  f.set_field("mtu");
  state.SetFields(true, {f});
  moved("SetFields with a field");
  f.set_observed("1500");
  state.SetFields(true, {f});
  moved("a field's observed value");
}

// Each RoCE port's QoS is published with the config paths the pass's
// fields manage on it (by netdev for netdev fields, "device/port" for the
// RDMA port's); a pass that reads the same values again moves nothing, a
// value that changed moves the version.
TEST(PublishedState, InterfaceQosMarksManagedFieldsAndMovesOnlyWhenAValueChanges) {
  PublishedState state;
  roced::v1::InterfaceQos q;
  q.set_netdev("ens1f0");
  q.set_rdma_device("mlx5_0");
  q.set_port(1);
  q.mutable_pfc()->add_priorities(3);
  (*q.mutable_dcqcn())["cnp_dscp"] = 48;
  (*q.mutable_dcqcn())["rpg_time_reset"] = 300;
  uint64_t v = state.Version();
  state.SetInterfaceQos({q});
  EXPECT_GT(state.Version(), v);
  ASSERT_EQ(state.Snapshot().interface_qos_size(), 1);
  EXPECT_TRUE(state.Snapshot().interface_qos(0).has_observed_at());
  EXPECT_TRUE(state.Snapshot().interface_qos(0).managed().empty());
  v = state.Version();
  state.SetInterfaceQos({q});
  EXPECT_EQ(state.Version(), v) << "the same values read again (every pass reads them)";

  auto field = [](const std::string& object, const std::string& path) {
    roced::v1::FieldStatus f;
    f.set_object(object);
    f.set_field(path);
    return f;
  };
  state.SetFields(true, {field("ens1f0", "mtu"), field("mlx5_0/1", "roce.default_tos"), field("eth0", "qos.pfc"),
                         field("mlx5_1/1", "roce.default_mode")});
  EXPECT_THAT(state.Snapshot().interface_qos(0).managed(), ::testing::ElementsAre("mtu", "roce.default_tos"));
  v = state.Version();
  state.SetInterfaceQos({q});
  EXPECT_EQ(state.Version(), v);
  EXPECT_THAT(state.Snapshot().interface_qos(0).managed(), ::testing::ElementsAre("mtu", "roce.default_tos"))
      << "a new reading keeps what the fields manage";
  q.mutable_pfc()->add_priorities(4);
  state.SetInterfaceQos({q});
  EXPECT_GT(state.Version(), v) << "PFC changed on the node";
  EXPECT_EQ(state.Snapshot().interface_qos(0).pfc().priorities_size(), 2);
  state.SetFields(true, {});
  EXPECT_TRUE(state.Snapshot().interface_qos(0).managed().empty()) << "a config that manages nothing here";
}

// The agent's threads that follow the state sleep until a listener wakes
// them: every version change calls every listener, once; a
// removed one is not called again.
TEST(PublishedState, ListenersAreCalledOnEveryChangeAndNotAfterRemoval) {
  PublishedState state;
  int a = 0, b = 0;
  const uint64_t id_a = state.AddListener([&] { ++a; });
  state.AddListener([&] { ++b; });
  state.AddWarning("w");
  state.AddWarning("w");  // no change: no call
  state.SetComponentHealth("grpc", true, "up");
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 2);
  state.RemoveListener(id_a);
  state.SetConfigError("bad");
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 3);
}

// A node event the state does not hold (a netlink DCB change) wakes the
// listeners without moving the version: readers polling it copy nothing.
TEST(PublishedState, NotifyListenersCallsThemWithoutAVersionChange) {
  PublishedState state;
  int calls = 0;
  state.AddListener([&] { ++calls; });
  const uint64_t v = state.Version();
  state.NotifyListeners();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(state.Version(), v);
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

TEST(StateDir, GenerationTextIsADecimalNumber) {
  EXPECT_EQ(*ParseGenerationText("42\n"), 42u);
  EXPECT_EQ(*ParseGenerationText("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"", "\n", "-1\n", "4 2\n", "0x10", "18446744073709551616", "7\n\n", "+3"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseGenerationText(bad).status())) << "'" << bad << "'";
  }
}

// What a newer agent wrote (fields this one does not know, at the top and
// inside the config) is read, not dropped: a downgrade keeps the config.
TEST(StateDir, UnknownFieldsInAcceptedJsonAreIgnored) {
  const std::string dir = test_util::MakeTempDir();
  ASSERT_TRUE(util::WriteFileAtomic(dir + "/accepted.json",
                                    R"({"generation": "9", "source": "CONFIG_SOURCE_GRPC", "fromTheFuture": [1],)"
                                    R"( "config": {"apiVersion": "roced/v1", "kind": "NodeConfig", "newKnob": {"x": 1},)"
                                    R"( "interfaces": [{"match": {"netdev": "eth0"}, "mtu": 9000}]}})")
                  .ok());
  PersistedState loaded = StateDir(dir).LoadPersisted();
  ASSERT_TRUE(loaded.accepted.has_value());
  EXPECT_EQ(loaded.accepted->generation(), 9u);
  EXPECT_EQ(loaded.accepted->config().interfaces(0).mtu(), 9000u);
  EXPECT_EQ(loaded.generation_floor, 9u);
  EXPECT_TRUE(loaded.problems.empty());
  std::filesystem::remove_all(dir);
}

// A truncated accepted.json is renamed aside with its content, not
// overwritten, and the generation file keeps the floor.
TEST(StateDir, UnreadableAcceptedJsonIsKeptAsideAndTheGenerationFileKeepsTheFloor) {
  const std::string dir = test_util::MakeTempDir();
  StateDir state_dir(dir);
  roced::v1::AcceptedConfig a;
  a.set_generation(12);
  ASSERT_TRUE(state_dir.SaveAccepted(a).ok());
  EXPECT_EQ(*util::ReadFile(dir + "/generation"), "12\n");
  const std::string truncated = "{\"generation\": \"12\", \"conf";
  ASSERT_TRUE(util::WriteFileAtomic(dir + "/accepted.json", truncated).ok());
  PersistedState loaded = state_dir.LoadPersisted();
  EXPECT_FALSE(loaded.accepted.has_value());
  EXPECT_EQ(loaded.generation_floor, 12u);
  ASSERT_EQ(loaded.problems.size(), 1u);
  EXPECT_THAT(loaded.problems[0], ::testing::HasSubstr(dir + "/accepted.json does not parse"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/accepted.json"));
  std::vector<std::string> aside;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (absl::StartsWith(e.path().filename().string(), "accepted.json.bad-")) aside.push_back(e.path().string());
  }
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_THAT(loaded.problems[0], ::testing::HasSubstr("kept as " + aside[0]));
  EXPECT_EQ(*util::ReadFile(aside[0]), truncated);

  // A bad generation file is reported; accepted.json still gives the floor.
  a.set_generation(13);
  ASSERT_TRUE(state_dir.SaveAccepted(a).ok());
  ASSERT_TRUE(util::WriteFileAtomic(dir + "/generation", "1x\n").ok());
  loaded = state_dir.LoadPersisted();
  EXPECT_EQ(loaded.generation_floor, 13u);
  ASSERT_EQ(loaded.problems.size(), 1u);
  EXPECT_THAT(loaded.problems[0], ::testing::HasSubstr(dir + "/generation is unreadable"));
  std::filesystem::remove_all(dir);
}

TEST(StateDir, OnlyTheNewestFilesSetAsideAreKept) {
  const std::string dir = test_util::MakeTempDir();
  StateDir state_dir(dir);
  for (int i = 0; i < StateDir::kKeptAside + 3; ++i) {
    ASSERT_TRUE(util::WriteFileAtomic(dir + "/accepted.json", absl::StrCat("bad ", i)).ok());
    state_dir.SetAsideAccepted("test");
    absl::SleepFor(absl::Microseconds(5));  // why: set-aside names carry the wall clock to the microsecond
  }
  std::vector<std::string> kept;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (absl::StartsWith(e.path().filename().string(), "accepted.json.bad-")) kept.push_back(e.path().string());
  }
  std::sort(kept.begin(), kept.end());
  ASSERT_EQ(kept.size(), static_cast<size_t>(StateDir::kKeptAside));
  EXPECT_EQ(*util::ReadFile(kept.back()), absl::StrCat("bad ", StateDir::kKeptAside + 2));
  EXPECT_EQ(*util::ReadFile(kept.front()), "bad 3");
  std::filesystem::remove_all(dir);
}

TEST(StateDir, CheckWritableCreatesTheDirectoryOrNamesIt) {
  const std::string dir = test_util::MakeTempDir();
  EXPECT_TRUE(StateDir(dir + "/a/b").CheckWritable().ok());
  EXPECT_TRUE(std::filesystem::is_directory(dir + "/a/b"));
  EXPECT_TRUE(std::filesystem::is_empty(dir + "/a/b")) << "the probe file is removed";
  ASSERT_TRUE(util::WriteFileAtomic(dir + "/file", "").ok());
  absl::Status s = StateDir(dir + "/file/state").CheckWritable();  // ENOTDIR, even for root
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("cannot create " + dir + "/file/state"));
  std::filesystem::remove_all(dir);
}

// Describe: each Ethernet port's lowest-index RoCE v2 GID of an IPv4
// address (InfiniBand ports and ports without one left out), by device and
// port; the ToR from the first RoCE netdev by name that hears a switch
// (the system name, else the chassis ID; a neighbour on another netdev
// does not count).
TEST(DescribeNode, EndpointsAndTheTorFromLldp) {
  roced::v1::NodeState state;
  state.set_hostname("node7");
  state.mutable_agent()->set_version("1.2.3");
  auto add_gid = [](roced::v1::Port* p, uint32_t index, roced::v1::GidType type, const std::string& ip) {
    roced::v1::Gid* g = p->add_gids();
    g->set_index(index);
    g->set_type(type);
    g->set_ip_address(ip);
    g->set_gid("gid-" + std::to_string(index));
  };
  roced::v1::RdmaDevice* mlx = state.add_devices();
  mlx->set_name("mlx5_1");
  roced::v1::Port* p = mlx->add_ports();
  p->set_number(1);
  p->set_link_layer("Ethernet");
  p->set_netdev("eth1");
  p->set_active_mtu(4096);
  add_gid(p, 0, roced::v1::GID_TYPE_ROCE_V1, "10.0.0.7");
  add_gid(p, 1, roced::v1::GID_TYPE_ROCE_V2, "fe80::1");
  add_gid(p, 3, roced::v1::GID_TYPE_ROCE_V2, "10.0.1.7");
  add_gid(p, 2, roced::v1::GID_TYPE_ROCE_V2, "10.0.0.7");
  roced::v1::RdmaDevice* ib = state.add_devices();
  ib->set_name("mlx5_0");
  p = ib->add_ports();
  p->set_number(1);
  p->set_link_layer("InfiniBand");
  add_gid(p, 0, roced::v1::GID_TYPE_ROCE_V2, "10.9.9.9");
  roced::v1::RdmaDevice* rxe = state.add_devices();
  rxe->set_name("rxe0");
  p = rxe->add_ports();
  p->set_number(1);
  p->set_link_layer("Ethernet");
  p->set_netdev("eth0");
  add_gid(p, 0, roced::v1::GID_TYPE_ROCE_V1, "10.0.2.7");

  std::vector<roced::v1::LldpNeighbor> neighbors(3);
  neighbors[0].set_netdev("eth9");  // not a RoCE netdev
  neighbors[0].set_system_name("mgmt-switch");
  neighbors[1].set_netdev("eth1");
  neighbors[1].set_system_name("tor-b");
  neighbors[2].set_netdev("eth0");
  neighbors[2].set_chassis_id("00:11:22:33:44:55");  // no system name

  roced::v1::DescribeResponse d = DescribeNode(state, neighbors);
  EXPECT_EQ(d.node_name(), "node7");
  EXPECT_EQ(d.version(), "1.2.3");
  ASSERT_EQ(d.endpoints_size(), 1);
  EXPECT_EQ(d.endpoints(0).device(), "mlx5_1");
  EXPECT_EQ(d.endpoints(0).port(), 1u);
  EXPECT_EQ(d.endpoints(0).netdev(), "eth1");
  EXPECT_EQ(d.endpoints(0).gid(), "gid-2");
  EXPECT_EQ(d.endpoints(0).gid_index(), 2u);
  EXPECT_EQ(d.endpoints(0).ip_address(), "10.0.0.7");
  EXPECT_EQ(d.endpoints(0).active_mtu(), 4096u);
  EXPECT_EQ(d.endpoints(0).ud_qpn(), 0u);
  EXPECT_EQ(d.tor(), "00:11:22:33:44:55");
  EXPECT_EQ(d.tor_source(), "lldp:eth0");

  neighbors.erase(neighbors.begin() + 2);
  d = DescribeNode(state, neighbors);
  EXPECT_EQ(d.tor(), "tor-b");
  EXPECT_EQ(d.tor_source(), "lldp:eth1");
  d = DescribeNode(state, {neighbors[0]});
  EXPECT_EQ(d.tor(), "");
  EXPECT_EQ(d.tor_source(), "");
  EXPECT_EQ(d.pod(), "");

  // The config's names win over what LLDP says.
  state.mutable_config()->mutable_desired()->mutable_mesh()->set_tor("rack12-tor");
  state.mutable_config()->mutable_desired()->mutable_mesh()->set_pod("pod-3");
  d = DescribeNode(state, neighbors);
  EXPECT_EQ(d.tor(), "rack12-tor");
  EXPECT_EQ(d.tor_source(), "config");
  EXPECT_EQ(d.pod(), "pod-3");
  EXPECT_EQ(d.endpoints_size(), 1);
}

}  // namespace
}  // namespace roced::agent

// The mesh runtime without verbs (the fixture tree has no RDMA device the
// UD port could open): membership from the inventory, each peer's
// endpoint from its Describe (a fake standing in for the peers' agents),
// the problems ListMeshResults reports, and its bounds.
namespace roced::agent {
namespace mesh_runtime_test {

roced::v1::DescribeResponse Peer(const std::string& name, uint32_t qpn) {
  roced::v1::DescribeResponse d;
  d.set_node_name(name);
  roced::v1::MeshEndpoint* e = d.add_endpoints();
  e->set_device("rxe0");
  e->set_port(1);
  e->set_gid("::ffff:192.168.77.12");
  e->set_active_mtu(1024);
  e->set_ud_qpn(qpn);
  return d;
}

// List() once every peer was described (or 5 s passed).
roced::v1::ListMeshResultsResponse Described(const MeshRuntime& runtime, size_t peers) {
  roced::v1::ListMeshResultsResponse r;
  for (int i = 0; i < 500; ++i) {
    absl::StatusOr<roced::v1::ListMeshResultsResponse> got = runtime.List({});
    if (got.ok()) r = *got;
    size_t described = 0;
    for (const auto& p : r.peers()) described += p.error() != "not described yet";
    if (static_cast<size_t>(r.peers_size()) == peers && described == peers) break;
    absl::SleepFor(absl::Milliseconds(10));  // poll: the condition of the loop above
  }
  return r;
}

TEST(MeshRuntime, OffSaysHowToTurnItOn) {
  Daemon agent(FixtureDaemonOptions());
  MeshRuntime runtime(agent.agent(), nullptr, {});
  EXPECT_FALSE(runtime.enabled());
  absl::StatusOr<roced::v1::ListMeshResultsResponse> r = runtime.List({});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), testing::HasSubstr("--mesh-inventory"));
}

TEST(MeshRuntime, PeersFromTheInventoryEndpointsFromTheirDescribe) {
  Daemon agent(FixtureDaemonOptions());
  const std::string self = agent.agent()->State().hostname();
  const std::string dir = test_util::MakeTempDir("roced-mesh");
  ASSERT_TRUE(util::WriteFileAtomic(dir + "/inventory", absl::StrCat(self, " 127.0.0.1:1 tor-x pod-1\n",
                                                                     "peer-a 127.0.0.1:2 tor-x pod-1\n",
                                                                     "peer-b 127.0.0.1:3 tor-x pod-1\n",
                                                                     "peer-c 127.0.0.1:4 tor-x pod-1\n"))
                  .ok());
  MeshRuntimeOptions options;
  options.inventory_path = dir + "/inventory";
  options.procfs_root = dir;  // no pressure file: no slowdown
  std::atomic<int> calls{0};
  options.describe = [&](const std::string& address, absl::Time) -> absl::StatusOr<roced::v1::DescribeResponse> {
    ++calls;
    if (address == "127.0.0.1:2") return Peer("peer-a", 77);
    if (address == "127.0.0.1:3") return absl::UnavailableError("Describe 127.0.0.1:3: connection refused");
    return Peer("someone-else", 78);  // the address answers as another node
  };
  auto registry = std::make_shared<prometheus::Registry>();
  options.registry = registry.get();
  MeshRuntime runtime(agent.agent(), nullptr, options);
  runtime.Start();
  roced::v1::ListMeshResultsResponse r = Described(runtime, 3);
  // The describes and the UD port's opening run on two threads: wait for
  // the port's failure too (no RDMA device here) before judging the answer.
  for (int i = 0; i < 500 && r.problem().empty(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));  // poll: the condition of the loop above
    r = Described(runtime, 3);
  }
  runtime.Stop();
  EXPECT_EQ(r.node_name(), self);
  EXPECT_EQ(r.tor(), "tor-x");
  EXPECT_EQ(r.pod(), "pod-1");
  EXPECT_EQ(r.window().seconds(), 60);
  ASSERT_EQ(r.peers_size(), 3);
  std::map<std::string, roced::v1::MeshPeer> peers;
  for (const auto& p : r.peers()) peers[p.name()] = p;
  EXPECT_TRUE(peers["peer-a"].reachable());
  EXPECT_EQ(peers["peer-a"].scope(), "same_tor");
  EXPECT_EQ(peers["peer-a"].address(), "127.0.0.1:2");
  EXPECT_FALSE(peers["peer-b"].reachable());
  EXPECT_THAT(peers["peer-b"].error(), testing::HasSubstr("connection refused"));
  EXPECT_FALSE(peers["peer-c"].reachable());
  EXPECT_THAT(peers["peer-c"].error(), testing::HasSubstr("is someone-else, not peer-c"));
  // No RDMA device here: the UD port's failure is the problem reported.
  EXPECT_THAT(r.problem(), testing::HasSubstr("UD")) << r.problem();
  EXPECT_EQ(calls.load(), 3);
  // Three same-ToR peers on the gauge.
  prometheus::TextSerializer text;
  const std::string scraped = text.Serialize(registry->Collect());
  EXPECT_THAT(scraped, testing::HasSubstr("roced_mesh_peers{scope=\"same_tor\"} 3"));
  // Who this instance is, for rocectl mesh --prometheus.
  EXPECT_THAT(scraped, testing::HasSubstr(absl::StrCat("roced_mesh_info{node=\"", self, "\",pod=\"pod-1\",tor=\"tor-x\"} 1")));
  // A peer filter longer than a member name can be.
  roced::v1::ListMeshResultsRequest too_long;
  too_long.set_peer(std::string(254, 'x'));
  EXPECT_EQ(runtime.List(too_long).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MeshRuntime, AnInventoryWithoutThisNodeIsAProblemNamed) {
  Daemon agent(FixtureDaemonOptions());
  const std::string dir = test_util::MakeTempDir("roced-mesh");
  ASSERT_TRUE(util::WriteFileAtomic(dir + "/inventory", "peer-a 127.0.0.1:2 tor-x\n").ok());
  MeshRuntimeOptions options;
  options.inventory_path = dir + "/inventory";
  options.procfs_root = dir;
  options.describe = [](const std::string&, absl::Time) -> absl::StatusOr<roced::v1::DescribeResponse> {
    return absl::UnavailableError("no");
  };
  MeshRuntime runtime(agent.agent(), nullptr, options);
  runtime.Start();
  roced::v1::ListMeshResultsResponse r;
  for (int i = 0; i < 500 && r.problem().find("inventory") == std::string::npos; ++i) {
    absl::SleepFor(absl::Milliseconds(10));  // poll: the condition of the loop above
    r = *runtime.List({});
  }
  runtime.Stop();
  EXPECT_THAT(r.problem(), testing::HasSubstr("is not in the inventory"));
  EXPECT_EQ(r.peers_size(), 0);
}

// The host's own state in ListMeshResults and on /metrics: CPU pressure
// over the threshold and an agent younger than the window make it busy,
// each reason stated with its figures.
TEST(MeshRuntime, SaysWhyTheHostIsBusy) {
  Daemon agent(FixtureDaemonOptions());
  const std::string self = agent.agent()->State().hostname();
  const std::string dir = test_util::MakeTempDir("roced-mesh");
  ASSERT_TRUE(util::WriteFileAtomic(dir + "/inventory", absl::StrCat(self, " 127.0.0.1:1 tor-x pod-1\n")).ok());
  std::filesystem::create_directories(dir + "/pressure");
  ASSERT_TRUE(
      util::WriteFileAtomic(dir + "/pressure/cpu", "some avg10=73.20 avg60=20.00 avg300=5.00 total=1\n").ok());
  MeshRuntimeOptions options;
  options.inventory_path = dir + "/inventory";
  options.procfs_root = dir;
  auto registry = std::make_shared<prometheus::Registry>();
  options.registry = registry.get();
  MeshRuntime runtime(agent.agent(), nullptr, options);
  runtime.Start();
  absl::StatusOr<roced::v1::ListMeshResultsResponse> r = runtime.List({});
  // The gauge is set by the membership loop's first turn.
  prometheus::TextSerializer text;
  std::string scraped;
  for (int i = 0; i < 500 && !absl::StrContains(scraped, "roced_mesh_host_busy 1"); ++i) {
    absl::SleepFor(absl::Milliseconds(10));  // poll: the condition of the loop above
    scraped = text.Serialize(registry->Collect());
  }
  runtime.Stop();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cpu_pressure(), 73.2);
  EXPECT_THAT(r->host_busy(), testing::HasSubstr("CPU pressure 73% (some avg10)"));
  EXPECT_THAT(r->host_busy(), testing::HasSubstr("s ago, within the 60 s window"));  // it just started
  EXPECT_LT(util::FromProto(r->uptime()), absl::Seconds(60));
  EXPECT_TRUE(r->has_max_loop_lag());
  EXPECT_THAT(scraped, testing::HasSubstr("roced_mesh_host_busy 1"));
}

TEST(CpuPressure, SomeAvg10FromProcfsAndNothingWithoutPsi) {
  const std::string dir = test_util::MakeTempDir("roced-psi");
  std::filesystem::create_directories(dir + "/pressure");
  ASSERT_TRUE(util::WriteFileAtomic(dir + "/pressure/cpu",
                                    "some avg10=43.21 avg60=1.00 avg300=0.50 total=12345\n"
                                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
                  .ok());
  hal::Paths paths;
  paths.procfs = dir;
  EXPECT_EQ(hal::CpuPressureAvg10(paths), 43.21);
  paths.procfs = dir + "/none";
  EXPECT_EQ(hal::CpuPressureAvg10(paths), std::nullopt);
}

// The DNS source: the name's addresses, each described to learn its node
// name, ToR and pod; an address that does not answer is left out; this node
// is found among them by its hostname.
TEST(MeshRuntime, MembersFromADnsNameAndTheirDescribe) {
  Daemon agent(FixtureDaemonOptions());
  const std::string self = agent.agent()->State().hostname();
  const std::string dir = test_util::MakeTempDir("roced-mesh");
  MeshRuntimeOptions options;
  options.dns_name = "roced.fleet.svc";
  options.dns_port = 7471;
  options.procfs_root = dir;
  std::atomic<int> resolved{0};
  options.resolve = [&](const std::string& name, uint16_t port) -> absl::StatusOr<std::vector<std::string>> {
    EXPECT_EQ(name, "roced.fleet.svc");
    EXPECT_EQ(port, 7471);
    ++resolved;
    return std::vector<std::string>{"10.0.0.1:7471", "10.0.0.2:7471", "10.0.0.3:7471"};
  };
  options.describe = [&](const std::string& address, absl::Time) -> absl::StatusOr<roced::v1::DescribeResponse> {
    roced::v1::DescribeResponse d;
    if (address == "10.0.0.3:7471") return absl::UnavailableError("connection refused");
    d = address == "10.0.0.1:7471" ? Peer(self, 0) : Peer("peer-b", 9);
    d.set_tor("tor-q");
    d.set_pod("pod-9");
    return d;
  };
  MeshRuntime runtime(agent.agent(), nullptr, options);
  EXPECT_TRUE(runtime.enabled());
  runtime.Start();
  roced::v1::ListMeshResultsResponse r = Described(runtime, 1);
  runtime.Stop();
  EXPECT_GE(resolved.load(), 1);
  EXPECT_EQ(r.tor(), "tor-q");  // this node's, as its own Describe says
  ASSERT_EQ(r.peers_size(), 1);
  EXPECT_EQ(r.peers(0).name(), "peer-b");
  EXPECT_EQ(r.peers(0).address(), "10.0.0.2:7471");
  EXPECT_EQ(r.peers(0).tor(), "tor-q");
  EXPECT_TRUE(r.peers(0).reachable());
}

// --dcb-fixture stands in for a kernel that is not there: with the live
// /sys (the default) it is refused before anything starts, naming the flag;
// with a fixture tree it must name a directory.
TEST(DaemonOptions, DcbFixtureOnlyWithAFixtureTreeAndADirectory) {
  const std::string dir = test_util::MakeTempDir("roced-dcbfix");
  Flags flags;
  flags.dcb_fixture = dir;
  absl::StatusOr<DaemonOptions> live = DaemonOptionsFromFlags(flags);
  ASSERT_FALSE(live.ok());
  EXPECT_EQ(live.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(live.status().message(), testing::HasSubstr("--dcb-fixture is for a fixture tree"));
  // Other spellings of the live /sys are the live /sys.
  const std::string link = dir + "/sys-link";
  std::filesystem::create_directory_symlink("/sys", link);
  for (const std::string& spelling : {std::string("/sys/"), std::string("//sys"), std::string("/sys/."),
                                      std::string("/sys/../sys"), std::string(""), link}) {
    flags.sysfs_root = spelling;
    EXPECT_FALSE(DaemonOptionsFromFlags(flags).ok()) << "--sysfs-root '" << spelling << "' passed as a fixture";
  }
  std::filesystem::remove(link);
  flags.sysfs_root = std::string(ROCED_FIXTURES) + "/sysfs";
  flags.dcb_fixture = dir + "/none";
  absl::StatusOr<DaemonOptions> missing = DaemonOptionsFromFlags(flags);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), testing::HasSubstr("--dcb-fixture " + dir + "/none: not a directory"));
  flags.dcb_fixture = dir;
  absl::StatusOr<DaemonOptions> fixture = DaemonOptionsFromFlags(flags);
  ASSERT_TRUE(fixture.ok()) << fixture.status();
  EXPECT_EQ(fixture->dcb_fixture, dir);
  std::filesystem::remove_all(dir);
}

TEST(MeshRuntime, DnsFlagParsedOrRefusedNamingIt) {
  EXPECT_EQ(*ParseMeshDns("roced.kube-system.svc:7471"), std::make_pair(std::string("roced.kube-system.svc"), uint16_t{7471}));
  for (const char* bad : {"roced", "roced:", ":7471", "roced:0", "roced:70000", "roced:x"}) {
    absl::StatusOr<std::pair<std::string, uint16_t>> r = ParseMeshDns(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), testing::HasSubstr("--mesh-dns")) << bad;
  }
  // A real resolution: localhost's addresses with the port.
  absl::StatusOr<std::vector<std::string>> local = util::ResolveAll("localhost", 7471);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_THAT(*local, testing::Contains(testing::AnyOf("127.0.0.1:7471", "[::1]:7471")));
  EXPECT_FALSE(util::ResolveAll("no-such-host.invalid", 1).ok());
}

TEST(MeshRuntime, DscpListParsedOrRefusedNamingTheFlag) {
  EXPECT_EQ(*ParseMeshDscps("26"), (std::vector<uint32_t>{26}));
  EXPECT_EQ(*ParseMeshDscps("26, 0"), (std::vector<uint32_t>{26, 0}));
  for (const char* bad : {"", "64", "26,x", "26,26", "1,2,3,4,5,6,7,8,9", "-1"}) {
    absl::StatusOr<std::vector<uint32_t>> r = ParseMeshDscps(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), testing::HasSubstr("--mesh-dscps")) << bad;
  }
}

}  // namespace mesh_runtime_test
}  // namespace roced::agent
