// Kernel-facing reconcile paths against the real kernel of the build
// machine: each test moves itself into a fresh network namespace and makes
// a veth pair there. veth has no DCB, so DCB calls must come back as
// "not supported" (the lab's test NIC covers DCB writes).
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hal/carrier_changes.h"
#include "hal/dcb_netlink.h"
#include "hal/link_monitor.h"
#include "hal/link_mtu.h"
#include "hal/congestion_files.h"
#include "hal/ecn_files.h"
#include "hal/ethtool_tunable.h"
#include "hal/hugepage_pools.h"
#include "hal/rdma_cm.h"
#include "util/fs.h"
#include "reconcile/linux_node_io.h"
#include "reconcile/plan.h"

namespace roced::reconcile {
namespace {

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (unshare(CLONE_NEWNET) != 0) {
      GTEST_SKIP() << "cannot create a network namespace (needs root / CAP_SYS_ADMIN): "
                   << strerror(errno);
    }
    ASSERT_EQ(system("ip link add rt0 type veth peer name rt1 && ip link set rt0 up && ip link set rt1 up"), 0);
  }
};

TEST_F(NetnsTest, MtuIsReadAndWrittenThroughRtnetlink) {
  hal::LinkMtu link;
  auto mtu = link.Get("rt0");
  ASSERT_TRUE(mtu.ok()) << mtu.status();
  EXPECT_EQ(*mtu, 1500u);
  ASSERT_TRUE(link.Set("rt0", 4200).ok());
  EXPECT_EQ(*link.Get("rt0"), 4200u);
  // An independent client sees it too.
  FILE* p = popen("ip -o link show rt0", "r");
  char buf[512] = {};
  ASSERT_NE(fgets(buf, sizeof(buf), p), nullptr);
  pclose(p);
  EXPECT_THAT(buf, ::testing::HasSubstr("mtu 4200"));
}

TEST_F(NetnsTest, MtuBeyondTheDriverLimitIsRejectedNamingNetdevAndValue) {
  hal::LinkMtu link;
  absl::Status s = link.Set("rt0", 70000);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("rt0: set MTU 70000"));
  EXPECT_EQ(*link.Get("rt0"), 1500u);
}

TEST_F(NetnsTest, MissingNetdevIsNotFound) {
  hal::LinkMtu link;
  EXPECT_EQ(link.Get("nosuch0").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(link.Exists("nosuch0"));
  EXPECT_TRUE(link.Exists("rt0"));
}

TEST_F(NetnsTest, DcbOnVethIsReportedUnsupported) {
  hal::DcbNetlink dcb;
  auto r = dcb.Get("rt0");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented) << r.status();
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("EOPNOTSUPP"));
  hal::DcbPfc pfc;
  pfc.pfc_en = 1 << 3;
  EXPECT_EQ(dcb.SetPfc("rt0", pfc).code(), absl::StatusCode::kUnimplemented);
}

// veth has no get_tunable op: the kernel's EOPNOTSUPP is "not supported",
// and a netdev that is not there is NOT_FOUND, not the same.
TEST_F(NetnsTest, PfcPreventionOnVethIsUnsupportedAndOnNoNetdevNotFound) {
  hal::EthtoolTunable tunable;
  auto got = tunable.GetPfcPreventionTimeout("rt0");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnimplemented) << got.status();
  EXPECT_THAT(std::string(got.status().message()), ::testing::HasSubstr("rt0: ETHTOOL_GTUNABLE pfc-prevention-tout"));
  absl::Status set = tunable.SetPfcPreventionTimeout("rt0", 100);
  EXPECT_EQ(set.code(), absl::StatusCode::kUnimplemented) << set;
  EXPECT_EQ(tunable.GetPfcPreventionTimeout("nosuch0").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(tunable.GetPfcPreventionTimeout("a-name-of-16-chr").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The same on the reconcile side: planned as unsupported, never written.
TEST_F(NetnsTest, NewQosKnobsOnVethAreUnsupportedAndNotPlanned) {
  LinuxNodeIo io(hal::Paths{});
  InterfaceObserved o = io.ObserveInterface(Target{0, "rt0", "", 1});
  EXPECT_EQ(o.buffer, std::nullopt);
  EXPECT_EQ(o.pfc_prevention, std::nullopt);
  EXPECT_TRUE(o.dcqcn.empty());
  std::vector<roced::v1::ValidationIssue> issues;
  roced::v1::NodeConfig config;
  auto* q = config.add_interfaces()->mutable_qos();
  config.mutable_interfaces(0)->mutable_match()->set_netdev("rt0");
  q->mutable_pfc_prevention()->set_auto_(true);
  q->mutable_dcqcn()->set_cnp_dscp(46);
  for (int k = 0; k < 8; ++k) q->mutable_buffers()->add_priority_to_buffer(k == 3 ? 1 : 0);
  std::vector<Target> targets{Target{0, "rt0", "", 1}};
  Plan plan = ComputePlan(config, targets, ObserveAll(&io, config, targets));
  EXPECT_TRUE(plan.empty());
  ASSERT_EQ(plan.fields.size(), 3u);
  for (const auto& f : plan.fields) EXPECT_EQ(f.sync(), roced::v1::FIELD_SYNC_UNSUPPORTED) << f.field();
}

TEST_F(NetnsTest, ApplyPlanChangesMtuAndVerifiesIt) {
  hal::Paths paths;  // live sysfs; ECN/configfs are absent for veth
  LinuxNodeIo io(paths);
  roced::v1::NodeConfig config;
  config.set_api_version("roced/v1");
  config.set_kind("NodeConfig");
  auto* i = config.add_interfaces();
  i->mutable_match()->set_netdev("rt0");
  i->set_mtu(9000);
  i->mutable_qos()->mutable_pfc()->add_priorities(3);
  std::vector<Target> targets = {Target{0, "rt0", "", 1}};
  Plan plan = ComputePlan(config, targets, ObserveAll(&io, config, targets));
  ASSERT_EQ(plan.steps.size(), 1u);  // PFC is unsupported on veth: no step
  auto result = ApplyPlan(plan, targets, &io);
  EXPECT_TRUE(result.success()) << result.DebugString();
  EXPECT_EQ(*hal::LinkMtu().Get("rt0"), 9000u);
  EXPECT_TRUE(ComputePlan(config, targets, ObserveAll(&io, config, targets)).empty());
}

TEST_F(NetnsTest, FailedMtuStepRollsBackTheStepsBeforeIt) {
  ASSERT_EQ(system("ip link add rt2 type veth peer name rt3"), 0);
  hal::Paths paths;
  LinuxNodeIo io(paths);
  roced::v1::NodeConfig config;
  auto* a = config.add_interfaces();
  a->mutable_match()->set_netdev("rt0");
  a->set_mtu(3000);
  auto* b = config.add_interfaces();
  b->mutable_match()->set_netdev("rt2");
  b->set_mtu(70000);  // beyond veth's maximum: the kernel refuses
  std::vector<Target> targets = {Target{0, "rt0", "", 1}, Target{1, "rt2", "", 1}};
  Plan plan = ComputePlan(config, targets, ObserveAll(&io, config, targets));
  ASSERT_EQ(plan.steps.size(), 2u);
  auto result = ApplyPlan(plan, targets, &io);
  EXPECT_FALSE(result.success());
  EXPECT_EQ(result.steps(0).outcome(), roced::v1::STEP_OUTCOME_ROLLED_BACK);
  EXPECT_EQ(result.steps(1).outcome(), roced::v1::STEP_OUTCOME_FAILED);
  EXPECT_EQ(*hal::LinkMtu().Get("rt0"), 1500u);
  EXPECT_EQ(*hal::LinkMtu().Get("rt2"), 1500u);
}

TEST_F(NetnsTest, LinkMonitorSeesAnMtuChangeMadeByAnotherTool) {
  std::atomic<int> calls{0};
  hal::LinkMonitor monitor([&](const std::string&) { calls.fetch_add(1); }, absl::Milliseconds(5));
  ASSERT_TRUE(monitor.Start().ok());
  ASSERT_EQ(system("ip link set rt1 mtu 2000"), 0);
  for (int i = 0; i < 100 && calls.load() == 0; ++i) usleep(10000);  // poll: the kernel's netlink event
  monitor.Stop();
  EXPECT_GE(calls.load(), 1);
  EXPECT_GE(monitor.events(), 1u);
}

// GIDs follow IP addresses: an address added by another tool wakes the
// monitor as an address change (discovery re-reads the GID table at once).
TEST_F(NetnsTest, LinkMonitorSeesAnAddressAddedByAnotherTool) {
  std::mutex mu;
  std::vector<std::string> reasons;
  hal::LinkMonitor monitor(
      [&](const std::string& r) {
        std::lock_guard<std::mutex> lock(mu);
        reasons.push_back(r);
      },
      absl::Milliseconds(5));
  ASSERT_TRUE(monitor.Start().ok());
  ASSERT_EQ(system("ip addr add 10.77.0.1/24 dev rt1"), 0);
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    usleep(10000);  // poll: the kernel's netlink event
    std::lock_guard<std::mutex> lock(mu);
    // The veth pair's own link events (carrier, IPv6 link-local) may share
    // the debounce window; the call names every kind the window held.
    seen = std::any_of(reasons.begin(), reasons.end(),
                       [](const std::string& r) { return r.find("address change") != std::string::npos; });
  }
  monitor.Stop();
  EXPECT_TRUE(seen);
}

// ECN enables on a file tree shaped like MLNX_OFED's sysfs: every per-bit
// transition (0->1, 1->0, unchanged) writes exactly the files that differ.
// Guards against GCC 12.2 -O2 miscompiling the bit comparison (seen in the
// lab: no 0->1 write ever reached the kernel).
TEST(EcnFiles, WritesEveryBitThatDiffersAndNothingElse) {
  char tmpl[] = "/tmp/roced-ecn-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  const std::string dir = root + "/class/net/eth9/ecn/roce_np/enable";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  auto put = [&](uint8_t mask) {
    for (int p = 0; p < 8; ++p) {
      FILE* f = fopen((dir + "/" + std::to_string(p)).c_str(), "w");
      ASSERT_NE(f, nullptr);
      fputs(mask & (1u << p) ? "1\n" : "0\n", f);
      fclose(f);
    }
  };
  hal::Paths paths;
  paths.sysfs = root;
  hal::EcnFiles ecn(paths);
  for (auto [from, to] : std::vector<std::pair<uint8_t, uint8_t>>{
           {0x00, 0x08}, {0x08, 0x00}, {0x0f, 0xf0}, {0xa5, 0xa5}, {0x00, 0xff}, {0xff, 0x00}, {0x09, 0x0c}}) {
    put(from);
    ASSERT_TRUE(ecn.Set("eth9", hal::EcnRole::kNotificationPoint, from, to).ok());
    auto got = ecn.Get("eth9", hal::EcnRole::kNotificationPoint);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, to) << "from " << int(from) << " to " << int(to);
  }
  ASSERT_EQ(system(("rm -rf " + root).c_str()), 0);
}

// Both places a DCQCN parameter can live, over a file tree laid out as the
// kernel lays them out: the MLNX_OFED file wins; without it the upstream
// debugfs file of the netdev's PCI function (found through its device
// link) under its own name; without either, UNIMPLEMENTED naming both.
TEST(CongestionFiles, ReadsAndWritesMlnxOfedSysfsElseUpstreamDebugfs) {
  char tmpl[] = "/tmp/roced-cc-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  hal::Paths paths;
  paths.sysfs = root + "/sys";
  paths.debugfs = root + "/debug";
  const std::string ofed = paths.sysfs + "/class/net/eth0/ecn";
  const std::string cc = paths.debugfs + "/mlx5/0000:3b:00.1/cc_params";
  ASSERT_EQ(system(("mkdir -p " + ofed + "/roce_np " + ofed + "/roce_rp " + cc + " " + paths.sysfs +
                    "/devices/pci0000:3a/0000:3b:00.1/net/eth1 " + paths.sysfs + "/class/net && " +
                    "echo 48 > " + ofed + "/roce_np/cnp_dscp && echo 5 > " + ofed + "/roce_rp/rpg_ai_rate && " +
                    "echo 26 > " + cc + "/np_cnp_dscp && echo 3 > " + cc + "/np_cnp_prio && " +
                    "echo 1 > " + cc + "/rp_clamp_tgt_rate_ati && echo 20 > " + cc + "/rp_ai_rate && " +
                    "ln -s ../../devices/pci0000:3a/0000:3b:00.1/net/eth1 " + paths.sysfs + "/class/net/eth1 && " +
                    "ln -s ../../../0000:3b:00.1 " + paths.sysfs + "/devices/pci0000:3a/0000:3b:00.1/net/eth1/device")
                       .c_str()),
            0);
  hal::CongestionFiles files(paths);
  using hal::EcnRole;
  EXPECT_EQ(*files.Get("eth0", EcnRole::kNotificationPoint, "cnp_dscp"), 48u);
  ASSERT_TRUE(files.Set("eth0", EcnRole::kReactionPoint, "rpg_ai_rate", 10).ok());
  EXPECT_EQ(*util::ReadFileTrimmed(ofed + "/roce_rp/rpg_ai_rate"), "10");
  EXPECT_EQ(*files.Get("eth1", EcnRole::kNotificationPoint, "cnp_dscp"), 26u);
  EXPECT_EQ(*files.Get("eth1", EcnRole::kNotificationPoint, "cnp_802p_prio"), 3u);
  EXPECT_EQ(*files.Get("eth1", EcnRole::kReactionPoint, "clamp_tgt_rate_after_time_inc"), 1u);
  ASSERT_TRUE(files.Set("eth1", EcnRole::kReactionPoint, "rpg_ai_rate", 40).ok());
  EXPECT_EQ(*util::ReadFileTrimmed(cc + "/rp_ai_rate"), "40");
  auto missing = files.Get("eth1", EcnRole::kReactionPoint, "rpg_gd");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(missing.status().message()),
              ::testing::AllOf(::testing::HasSubstr("ecn/roce_rp/rpg_gd"), ::testing::HasSubstr("cc_params/rp_gd")));
  EXPECT_EQ(files.Set("eth2", EcnRole::kReactionPoint, "rpg_gd", 1).code(), absl::StatusCode::kUnimplemented);
  ASSERT_EQ(system(("rm -rf " + root).c_str()), 0);
}

TEST(CongestionFiles, Mlx5DebugfsNamesFollowMlx5Ib) {
  using hal::EcnRole;
  EXPECT_EQ(hal::Mlx5DebugfsName("cnp_dscp", EcnRole::kNotificationPoint), "np_cnp_dscp");
  EXPECT_EQ(hal::Mlx5DebugfsName("cnp_802p_prio", EcnRole::kNotificationPoint), "np_cnp_prio");
  EXPECT_EQ(hal::Mlx5DebugfsName("min_time_between_cnps", EcnRole::kNotificationPoint), "np_min_time_between_cnps");
  EXPECT_EQ(hal::Mlx5DebugfsName("rpg_time_reset", EcnRole::kReactionPoint), "rp_time_reset");
  EXPECT_EQ(hal::Mlx5DebugfsName("rate_to_set_on_first_cnp", EcnRole::kReactionPoint), "rp_rate_to_set_on_first_cnp");
  EXPECT_EQ(hal::Mlx5DebugfsName("dce_tcp_g", EcnRole::kReactionPoint), "rp_dce_tcp_g");
  EXPECT_EQ(hal::Mlx5DebugfsName("clamp_tgt_rate_after_time_inc", EcnRole::kReactionPoint), "rp_clamp_tgt_rate_ati");
}

// Reading rdma_cm defaults must not leave a configfs group behind: a read
// on a device whose group did not exist removes the group it made; a group
// that existed (an operator's, or one a setter made) stays. On this plain
// file tree mkdir makes an empty directory (configfs would populate it), so
// the fresh-group read fails, which is also the path that must clean up.
TEST(RdmaCm, AReadLeavesNoGroupBehind) {
  char tmpl[] = "/tmp/roced-cm-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  ASSERT_EQ(system(("mkdir -p " + root + "/rdma_cm/mlx5_7/ports/1").c_str()), 0);
  FILE* f = fopen((root + "/rdma_cm/mlx5_7/ports/1/default_roce_mode").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("RoCE v2\n", f);
  fclose(f);
  hal::Paths paths;
  paths.configfs = root;
  hal::RdmaCm files(paths);

  EXPECT_FALSE(files.GetRoceMode("rxe9", 1).ok());
  EXPECT_FALSE(util::PathExists(root + "/rdma_cm/rxe9")) << "a read left the rdma_cm group it made";
  EXPECT_FALSE(files.GetRoceTos("rxe9", 1).ok());
  EXPECT_FALSE(util::PathExists(root + "/rdma_cm/rxe9"));

  auto mode = files.GetRoceMode("mlx5_7", 1);
  ASSERT_TRUE(mode.ok()) << mode.status();
  EXPECT_EQ(*mode, "RoCE v2");
  EXPECT_TRUE(util::PathExists(root + "/rdma_cm/mlx5_7/ports/1")) << "an existing group was removed";
  ASSERT_EQ(system(("rm -rf " + root).c_str()), 0);
}

// The hugepage pools on a file tree shaped like sysfs: the node-wide list
// names every pool directory the kernel makes, with its page count, and
// nothing else; single pools are read and written by size and NUMA node.
TEST(HugepagePools, NodeWideListsEveryPoolWithItsPages) {
  char tmpl[] = "/tmp/roced-hp-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  const std::string hp = root + "/kernel/mm/hugepages";
  const std::string numa = root + "/devices/system/node/node1/hugepages/hugepages-2048kB";
  ASSERT_EQ(system(("mkdir -p " + hp + "/hugepages-2048kB " + hp + "/hugepages-1048576kB " + hp +
                    "/hugepages-64kB " + hp + "/hugepages-xkB " + numa)
                       .c_str()),
            0);
  auto put = [](const std::string& path, const char* text) {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(text, f);
    fclose(f);
  };
  put(hp + "/hugepages-2048kB/nr_hugepages", "512\n");
  put(hp + "/hugepages-1048576kB/nr_hugepages", "4\n");
  put(hp + "/hugepages-xkB/nr_hugepages", "9\n");  // not a size: skipped
  put(hp + "/README", "not a pool\n");
  // hugepages-64kB has no nr_hugepages: left out.
  put(numa + "/nr_hugepages", "7\n");
  hal::Paths paths;
  paths.sysfs = root;
  hal::HugepagePools pools(paths);

  EXPECT_EQ(pools.NodeWide(), (std::map<uint64_t, uint64_t>{{2048, 512}, {1048576, 4}}));
  EXPECT_EQ(*pools.Get(2048, -1), 512u);
  EXPECT_EQ(*pools.Get(2048, 1), 7u);
  EXPECT_EQ(pools.Get(2048, 3).status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(pools.Get(16384, -1).status().code(), absl::StatusCode::kUnimplemented);
  // (A plain file is overwritten in place, not truncated as sysfs
  // attributes are: the new value has the old one's length.)
  ASSERT_TRUE(pools.Set(2048, 1, 12).ok());
  EXPECT_EQ(*util::ReadFile(numa + "/nr_hugepages"), "12");
  EXPECT_EQ(*pools.Get(2048, 1), 12u);
  ASSERT_EQ(system(("rm -rf " + root).c_str()), 0);
}

TEST(HugepagePools, ANodeWithoutHugepagesListsNone) {
  char tmpl[] = "/tmp/roced-hp-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  hal::Paths paths;
  paths.sysfs = tmpl;
  EXPECT_TRUE(hal::HugepagePools(paths).NodeWide().empty());
  ASSERT_EQ(system((std::string("rm -rf ") + tmpl).c_str()), 0);
}

// sysfs shows the netdevs of the network namespace it was mounted in, so
// the test mounts one of this namespace's, in a mount namespace of its own.
TEST_F(NetnsTest, CarrierChangesCountEachDownAndUpOfARealVeth) {
  if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    GTEST_SKIP() << "cannot create a mount namespace: " << strerror(errno);
  }
  char tmpl[] = "/tmp/roced-sysfs-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  ASSERT_EQ(mount("sysfs", tmpl, "sysfs", 0, nullptr), 0) << strerror(errno);
  hal::Paths paths;
  paths.sysfs = tmpl;
  auto before = hal::ReadCarrierChanges(paths, "rt0");
  ASSERT_TRUE(before.ok()) << before.status();
  // rt0's carrier follows its peer: down, then up again.
  ASSERT_EQ(system("ip link set rt1 down && ip link set rt1 up"), 0);
  auto after = hal::ReadCarrierChanges(paths, "rt0");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *before + 2);
  auto missing = hal::ReadCarrierChanges(paths, "nosuch0");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  umount2(tmpl, MNT_DETACH);
  rmdir(tmpl);
}

}  // namespace
}  // namespace roced::reconcile
