// The kernel-facing readers behind the host diagnose checks (numa_locality,
// neighbours, arp_flux, clock_sync): sysfs/procfs readers on trees made in a
// temporary directory and on the live kernel, adjtimex on the live kernel,
// and rtnetlink and /proc/sys/net in a fresh network namespace with veth
// (skipped without the capability), where GatherHost feeds the checks.
#include <linux/neighbour.h>
#include <sched.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "diagnose/checks.h"
#include "hal/arp_sysctls.h"
#include "hal/clock_sync.h"
#include "hal/hugepage_pools.h"
#include "hal/neighbours.h"
#include "hal/numa_locality.h"
#include "util/fs.h"
#include "util/ip_subnet.h"

namespace roced {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

// A scratch directory removed with the test.
class TreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "roced-host-XXXXXX").string();
    root_ = mkdtemp(tmpl.data());
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::path p = fs::path(root_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  hal::Paths PathsHere() const { return hal::Paths{.sysfs = root_ + "/sys", .procfs = root_ + "/proc"}; }
  std::string root_;
};

TEST(CpuList, ParsesTheKernelsListFormAndWritesItBack) {
  auto cpus = hal::ParseCpuList("0-3,8,10-11\n");
  ASSERT_TRUE(cpus.has_value());
  EXPECT_EQ(*cpus, (hal::CpuSet{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(hal::FormatCpuList(*cpus), "0-3,8,10-11");
  EXPECT_THAT(*hal::ParseCpuList("\n"), IsEmpty());  // a memory-only node
  EXPECT_FALSE(hal::ParseCpuList("3-1").has_value());
  EXPECT_FALSE(hal::ParseCpuList("0-x").has_value());
  EXPECT_FALSE(hal::ParseCpuList("0,,2").has_value());
  EXPECT_FALSE(hal::ParseCpuList("0-70000").has_value());
}

TEST_F(TreeTest, NumaNodesIrqAffinityAndPerNodeHugepagesAreReadFromTheTree) {
  Write("sys/devices/system/node/node0/cpulist", "0-3\n");
  Write("sys/devices/system/node/node1/cpulist", "4-7\n");
  Write("sys/devices/system/node/has_cpu", "0-1\n");
  Write("sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "0\n");
  Write("sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", "512\n");
  Write("sys/devices/system/node/node1/hugepages/hugepages-1048576kB/nr_hugepages", "2\n");
  Write("sys/class/infiniband/mlx5_0/device/msi_irqs/40", "msix\n");
  Write("sys/class/infiniband/mlx5_0/device/msi_irqs/41", "msix\n");
  Write("sys/class/infiniband/mlx5_0/device/msi_irqs/42", "msix\n");  // no /proc/irq/42: left out
  Write("proc/irq/40/smp_affinity_list", "0-1\n");
  Write("proc/irq/41/smp_affinity_list", "6\n");
  const hal::Paths paths = PathsHere();

  EXPECT_THAT(hal::NumaNodeCpus(paths),
              ElementsAre(Pair(0, hal::CpuSet{0, 1, 2, 3}), Pair(1, hal::CpuSet{4, 5, 6, 7})));
  EXPECT_THAT(hal::DeviceIrqAffinity(paths, "mlx5_0"),
              ElementsAre(Pair(40u, hal::CpuSet{0, 1}), Pair(41u, hal::CpuSet{6})));
  EXPECT_THAT(hal::DeviceIrqAffinity(paths, "rxe0"), IsEmpty());
  using Pools = std::map<uint64_t, uint64_t>;
  EXPECT_THAT(hal::HugepagePools(paths).PerNumaNode(),
              ElementsAre(Pair(0, Pools{{2048, 0}}), Pair(1, Pools{{2048, 512}, {1048576, 2}})));

  // Through GatherHost into the check: the NIC on node 0, IRQ 41 on node 1.
  diagnose::Inputs in;
  auto* dev = in.state.add_devices();
  dev->set_name("mlx5_0");
  dev->set_numa_node(0);
  diagnose::GatherHost(paths, false, &in);
  in.allowed_cpus = {0, 1, 2, 3, 4, 5, 6, 7};  // the test's own affinity is the machine's
  auto f = diagnose::Run(in, {"numa_locality"});
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->size(), 2u);
  EXPECT_THAT((*f)[0].summary(), HasSubstr("none on the NIC's node 0"));
  EXPECT_THAT((*f)[1].detail(), HasSubstr("41 -> CPUs 6 (node 1)"));
}

TEST(NumaLiveKernel, EveryCpuThisProcessMayUseBelongsToANumaNode) {
  const hal::CpuSet allowed = hal::AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  // An independent reader of the same mask: the kernel's own status file.
  auto status = util::ReadFile("/proc/self/status");
  ASSERT_TRUE(status.ok());
  const size_t at = status->find("Cpus_allowed_list:");
  ASSERT_NE(at, std::string::npos);
  const std::string line = status->substr(at + 18, status->find('\n', at) - at - 18);
  EXPECT_EQ(hal::FormatCpuList(allowed), std::string(absl::StripAsciiWhitespace(line)));

  const auto nodes = hal::NumaNodeCpus(hal::Paths{});
  if (nodes.empty()) GTEST_SKIP() << "no NUMA topology in /sys here";
  hal::CpuSet all;
  for (const auto& [node, cpus] : nodes) all.insert(cpus.begin(), cpus.end());
  for (uint32_t cpu : allowed) EXPECT_TRUE(all.count(cpu)) << "CPU " << cpu << " is on no node";
}

TEST(ClockLiveKernel, AdjtimexAnswersConsistentlyWithTheKernelsOwnRules) {
  auto clock = hal::ReadKernelClock();
  ASSERT_TRUE(clock.ok()) << clock.status();
  // The kernel returns TIME_ERROR exactly when its status bits say error
  // (STA_UNSYNC among them), and never lets maxerror beyond its limit.
  EXPECT_EQ(clock->state == TIME_ERROR, hal::ClockStatusIsError(clock->status))
      << "state " << clock->state << " status " << hal::ClockStatusNames(clock->status);
  if (clock->status & STA_UNSYNC) {
    EXPECT_EQ(clock->state, TIME_ERROR);
  }
  EXPECT_GE(clock->state, TIME_OK);
  EXPECT_LE(clock->state, TIME_ERROR);
  EXPECT_GE(clock->max_error_us, 0);
  EXPECT_LE(clock->max_error_us, hal::kKernelMaxErrorLimitUs);
  EXPECT_GE(clock->est_error_us, 0);
  // The same state through the other door (clock_adjtime on CLOCK_REALTIME):
  // the reader passes on the kernel's answer, not zeros or stale values.
  timex direct{};
  const int direct_state = clock_adjtime(CLOCK_REALTIME, &direct);
  ASSERT_GE(direct_state, 0) << strerror(errno);
  EXPECT_EQ(clock->state, direct_state);
  EXPECT_EQ(clock->status, direct.status);
  EXPECT_NEAR(clock->max_error_us, direct.maxerror, 2000);  // grows 500 us per second
  EXPECT_GT(clock->max_error_us + clock->status, 0) << "maxerror 0 with no status bits: not a real answer";
  // The check reports this same answer, not a cached or made-up one.
  diagnose::Inputs in;
  diagnose::GatherHost(hal::Paths{}, false, &in);
  ASSERT_TRUE(in.clock.has_value());
  EXPECT_EQ(in.clock->status & STA_UNSYNC, clock->status & STA_UNSYNC);
  auto f = diagnose::Run(in, {"clock_sync"});
  ASSERT_TRUE(f.ok());
  const bool unsync_finding = !f->empty() && (*f)[0].summary() == "the system clock is not synchronised";
  EXPECT_EQ(unsync_finding, hal::ClockStatusIsError(in.clock->status));
}

TEST(ClockStatus, NamesAndErrorBitsFollowTheKernel) {
  EXPECT_EQ(hal::ClockStatusNames(STA_PLL | STA_UNSYNC | STA_NANO), "PLL|UNSYNC|NANO");
  EXPECT_EQ(hal::ClockStatusNames(0), "none");
  EXPECT_TRUE(hal::ClockStatusIsError(STA_UNSYNC));
  EXPECT_TRUE(hal::ClockStatusIsError(STA_CLOCKERR));
  EXPECT_TRUE(hal::ClockStatusIsError(STA_PPSTIME));  // PPS asked for, no signal
  EXPECT_FALSE(hal::ClockStatusIsError(STA_PPSTIME | STA_PPSSIGNAL));
  EXPECT_FALSE(hal::ClockStatusIsError(STA_PLL | STA_NANO));
}

TEST_F(TreeTest, PtpClocksAreListedWithTheirDriversName) {
  Write("sys/class/ptp/ptp0/clock_name", "mlx5_ptp\n");
  Write("sys/class/ptp/ptp1/clock_name", "\n");
  auto clocks = hal::ListPtpClocks(PathsHere());
  ASSERT_EQ(clocks.size(), 2u);
  EXPECT_EQ(clocks[0].name, "ptp0");
  EXPECT_EQ(clocks[0].clock_name, "mlx5_ptp");
  EXPECT_EQ(clocks[1].clock_name, "");
  fs::remove_all(root_ + "/sys/class/ptp");
  EXPECT_THAT(hal::ListPtpClocks(PathsHere()), IsEmpty());
}

TEST(IpSubnet, AddressesAndHostPorts) {
  auto net = util::SubnetOf("10.0.0.11", 24);
  ASSERT_TRUE(net.has_value());
  EXPECT_EQ(net->ToString(), "10.0.0.0/24");
  EXPECT_TRUE(net->Contains("10.0.0.200"));
  EXPECT_FALSE(net->Contains("10.0.1.1"));
  EXPECT_FALSE(net->Contains("::ffff:10.0.0.1"));
  EXPECT_EQ(util::SubnetOf("fd00::1:2", 112)->ToString(), "fd00::1:0/112");
  EXPECT_EQ(util::SubnetOf("10.1.2.3", 0)->ToString(), "0.0.0.0/0");
  EXPECT_FALSE(util::SubnetOf("10.0.0.1", 33).has_value());
  EXPECT_FALSE(util::SubnetOf("host", 24).has_value());
  EXPECT_EQ(util::IpOfHostPort("10.0.0.12:7471"), "10.0.0.12");
  EXPECT_EQ(util::IpOfHostPort("[fd00::2]:7471"), "fd00::2");
  EXPECT_EQ(util::IpOfHostPort("fd00::2"), "fd00::2");
  EXPECT_FALSE(util::IpOfHostPort("node2:7471").has_value());
}

// The one host:port check behind config peers, RunProbe targets and
// inventory files: each case here was accepted by at least one of the three
// checks it replaced, or refused by one and accepted by another.
TEST(IpSubnet, IsHostPort) {
  for (const char* good : {"10.0.0.12:7471", "node2:1", "node2.pod-a.svc:65535", "[fd00::2]:7471",
                           "[::1]:443", "n:0080"}) {
    EXPECT_TRUE(util::IsHostPort(good)) << good;
  }
  for (const char* bad : {"", ":7471", "node2", "node2:", "node2:0", "node2:65536", "node2:+80",
                          "node2:-1", "node2: 80", "node2:80 ", "node2:123456", "node2:8o",
                          "fd00::2:7471", "fd00::2", "[fd00::2]", "[fd00::2:7471", "fd00::2]:7471",
                          "[]:7471", "[[::1]]:7471", "no de:1", "x\x1b[2J:1", "caf\xc3\xa9:1", "a\tb:1"}) {
    EXPECT_FALSE(util::IsHostPort(bad)) << bad;
  }
}

// Each test in a fresh network namespace (its own neighbour tables,
// addresses and /proc/sys/net) with the veth pair nb0/nb1 up.
class NetnsHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (unshare(CLONE_NEWNET) != 0) {
      GTEST_SKIP() << "cannot create a network namespace (needs root / CAP_SYS_ADMIN): " << strerror(errno);
    }
    ASSERT_EQ(system("ip link add nb0 type veth peer name nb1 && ip link set nb0 up && ip link set nb1 up && "
                     "ip addr add 10.9.0.1/24 dev nb0"),
              0);
  }
  static void Sh(const std::string& cmd) { ASSERT_EQ(system(cmd.c_str()), 0) << cmd; }

 public:
  // A node whose one RoCE port's netdev is `netdev`.
  static void AddRocePort(diagnose::Inputs* in, const std::string& rdma, const std::string& netdev) {
    auto* dev = in->state.add_devices();
    dev->set_name(rdma);
    dev->set_numa_node(-1);
    auto* port = dev->add_ports();
    port->set_number(1);
    port->set_state(roced::v1::PORT_STATE_ACTIVE);
    port->set_link_layer("Ethernet");
    port->set_netdev(netdev);
  }
};

const hal::Neighbour* Find(const std::vector<hal::Neighbour>& table, const std::string& ip) {
  for (const auto& n : table) {
    if (n.ip == ip) return &n;
  }
  return nullptr;
}

TEST_F(NetnsHostTest, APermanentNeighbourIsReadBackResolvedWithItsMac) {
  Sh("ip neigh add 10.9.0.2 lladdr 02:00:00:00:09:02 dev nb0 nud permanent");
  auto table = hal::ListNeighbours("nb0");
  ASSERT_TRUE(table.ok()) << table.status();
  const hal::Neighbour* n = Find(*table, "10.9.0.2");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->state, NUD_PERMANENT);
  EXPECT_TRUE(hal::NeighbourResolved(n->state));
  EXPECT_EQ(n->lladdr, "02:00:00:00:09:02");
  EXPECT_EQ(Find(*table, "10.9.0.7"), nullptr);  // never asked for: absent
  // Only nb0's entries are nb0's (nb1 may hold IPv6 multicast entries of
  // its own, made by MLD as soon as it is up).
  auto other = hal::ListNeighbours("nb1");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(Find(*other, "10.9.0.2"), nullptr);
  EXPECT_EQ(hal::ListNeighbours("nosuch0").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(NetnsHostTest, AnAddressNobodyAnswersForEndsFailed) {
  // One ARP request, 100 ms to answer: the kernel's own resolution fails fast.
  Sh("echo 1 > /proc/sys/net/ipv4/neigh/nb0/mcast_solicit && "
     "echo 100 > /proc/sys/net/ipv4/neigh/nb0/retrans_time_ms");
  Sh("ping -c 1 -W 1 -I nb0 10.9.0.3 >/dev/null 2>&1 || true");
  uint16_t state = 0;
  for (int i = 0; i < 50 && state != NUD_FAILED; ++i) {
    auto table = hal::ListNeighbours("nb0");
    ASSERT_TRUE(table.ok()) << table.status();
    if (const hal::Neighbour* n = Find(*table, "10.9.0.3")) state = n->state;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // poll: the kernel's neighbour state
  }
  EXPECT_EQ(hal::NeighbourStateName(state), "FAILED");
  EXPECT_FALSE(hal::NeighbourResolved(state));
}

TEST_F(NetnsHostTest, AddressesAreReadWithTheirPrefix) {
  Sh("ip addr add fd00:9::1/64 dev nb0");
  auto addrs = hal::ListAddresses("nb0");
  ASSERT_TRUE(addrs.ok()) << addrs.status();
  bool v4 = false;
  bool v6 = false;
  for (const auto& a : *addrs) {
    if (a.ip == "10.9.0.1") v4 = a.prefix_len == 24 && !a.ipv6;
    if (a.ip == "fd00:9::1") v6 = a.prefix_len == 64 && a.ipv6;
  }
  EXPECT_TRUE(v4);
  EXPECT_TRUE(v6);
  EXPECT_EQ(hal::ListAddresses("nosuch0").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(NetnsHostTest, TheNeighboursCheckSeesTheKernelsTable) {
  Sh("ip neigh add 10.9.0.2 lladdr 02:00:00:00:09:02 dev nb0 nud permanent");
  Sh("ip neigh add 10.9.0.5 dev nb0 nud failed");
  diagnose::Inputs in;
  AddRocePort(&in, "rxe0", "nb0");
  for (const char* ip : {"10.9.0.2", "10.9.0.5"}) {
    auto* p = in.state.add_probes();
    p->set_peer(absl::StrCat("peer-", ip));
    p->set_last_success(true);
    p->set_peer_data_ip(ip);
  }
  diagnose::GatherHost(hal::Paths{}, true, &in);
  auto f = diagnose::Run(in, {"neighbours"});
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->size(), 1u);
  EXPECT_EQ((*f)[0].object(), "peer-10.9.0.5 (10.9.0.5)");
  EXPECT_THAT((*f)[0].summary(), HasSubstr("on nb0 is FAILED"));
}

TEST_F(NetnsHostTest, RouteLookupsGiveTheNetdevAndTheGateway) {
  Sh("ip route add 10.50.0.0/16 via 10.9.0.254 dev nb0");
  auto routed = hal::RouteTo("10.50.1.1");
  ASSERT_TRUE(routed.ok()) << routed.status();
  EXPECT_EQ(routed->netdev, "nb0");
  EXPECT_EQ(routed->gateway, "10.9.0.254");
  auto onlink = hal::RouteTo("10.9.0.7");
  ASSERT_TRUE(onlink.ok()) << onlink.status();
  EXPECT_EQ(onlink->netdev, "nb0");
  EXPECT_EQ(onlink->gateway, "");
  EXPECT_FALSE(hal::RouteTo("10.77.0.1").ok()) << "no default route in the namespace";
  EXPECT_EQ(hal::RouteTo("node2").status().code(), absl::StatusCode::kInvalidArgument);

  // Through GatherRoutes: the peer behind the gateway is judged by the
  // gateway's entry, which nobody answers for.
  Sh("ip neigh add 10.9.0.254 dev nb0 nud failed");
  diagnose::Inputs in;
  AddRocePort(&in, "rxe0", "nb0");
  auto* p = in.state.add_probes();
  p->set_peer("far");
  p->set_peer_data_ip("10.50.1.1");
  diagnose::GatherHost(hal::Paths{}, true, &in);
  diagnose::GatherRoutes(&in);
  auto f = diagnose::Run(in, {"neighbours"});
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->size(), 1u);
  EXPECT_THAT((*f)[0].summary(), HasSubstr("10.9.0.254 (the gateway to 10.50.1.1) on nb0 is FAILED"));
}

// What diagnose gathers on a node with RoCE ports on nb0 and nc0.
diagnose::Inputs GatherTwoPorts() {
  diagnose::Inputs in;
  NetnsHostTest::AddRocePort(&in, "rxe0", "nb0");
  NetnsHostTest::AddRocePort(&in, "rxe1", "nc0");
  diagnose::GatherHost(hal::Paths{}, true, &in);
  return in;
}

TEST_F(NetnsHostTest, ArpFluxFiresWithTheDefaultSysctlsAndNotOnceTheyAreSet) {
  Sh("ip link add nc0 type veth peer name nc1 && ip link set nc0 up && ip link set nc1 up && "
     "ip addr add 10.9.0.11/24 dev nc0");
  // The kernel's defaults, in case the namespace inherited the host's.
  Sh("sysctl -q -w net.ipv4.conf.all.arp_ignore=0 net.ipv4.conf.all.arp_announce=0 "
     "net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.nb0.rp_filter=0 net.ipv4.conf.nc0.rp_filter=1");
  diagnose::Inputs in = GatherTwoPorts();
  auto f = diagnose::Run(in, {"arp_flux"});
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->size(), 1u);
  EXPECT_EQ((*f)[0].severity(), roced::v1::SEVERITY_ERROR);  // strict rp_filter on nc0
  EXPECT_EQ((*f)[0].object(), "nb0, nc0 (10.9.0.0/24)");
  EXPECT_THAT((*f)[0].detail(), HasSubstr("nb0: arp_ignore 0, arp_announce 0, rp_filter 0; "
                                          "nc0: arp_ignore 0, arp_announce 0, rp_filter 1"));

  Sh("sysctl -q -w net.ipv4.conf.nb0.arp_ignore=1 net.ipv4.conf.nb0.arp_announce=2 "
     "net.ipv4.conf.nc0.arp_ignore=1 net.ipv4.conf.nc0.arp_announce=2 net.ipv4.conf.nc0.rp_filter=2");
  diagnose::Inputs after = GatherTwoPorts();
  EXPECT_EQ(after.arp_sysctls["nc0"].rp_filter, 2);
  f = diagnose::Run(after, {"arp_flux"});
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(*f, IsEmpty());
}

}  // namespace
}  // namespace roced
