#include "hal/sysfs_discovery.h"

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hal/paths.h"

#ifndef ROCED_FIXTURES
#error "ROCED_FIXTURES must name the tests/fixtures directory"
#endif

namespace roced::hal {
namespace {

namespace fs = std::filesystem;

using ::roced::v1::GidType;
using ::roced::v1::Port;
using ::roced::v1::PortState;
using ::roced::v1::RdmaDevice;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const std::string kFixtureSysfs = std::string(ROCED_FIXTURES) + "/sysfs";

// Real (not symlinked) directories of the fixture, relative to its root.
constexpr char kMlx50Dir[] = "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0";
constexpr char kMlx51Dir[] = "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/infiniband/mlx5_1";
constexpr char kMlx52Dir[] = "devices/pci0000:ae/0000:ae:00.0/0000:af:00.0/infiniband/mlx5_2";
constexpr char kRxe0Dir[] = "devices/virtual/infiniband/rxe0";
constexpr char kFn0Dir[] = "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0";

SysfsDiscovery DiscoveryAt(const std::string& sysfs) {
  Paths paths;
  paths.sysfs = sysfs;
  return SysfsDiscovery(paths);
}

RdmaDevice MustDiscover(const std::string& sysfs, const std::string& name) {
  absl::StatusOr<RdmaDevice> device = DiscoveryAt(sysfs).DiscoverDevice(name);
  EXPECT_TRUE(device.ok()) << device.status();
  return device.ok() ? *device : RdmaDevice();
}

// The device's first port; fails the test if it has none.
Port FirstPort(const RdmaDevice& device) {
  EXPECT_GE(device.ports_size(), 1) << device.name();
  return device.ports_size() > 0 ? device.ports(0) : Port();
}

std::vector<uint32_t> GidIndices(const Port& port) {
  std::vector<uint32_t> out;
  for (const auto& gid : port.gids()) out.push_back(gid.index());
  return out;
}

void WriteFile(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::trunc);
  out << content << "\n";
  ASSERT_TRUE(out.good()) << path;
}

// A private copy of the fixture tree (symlinks copied as links, so they stay
// relative and resolve inside the copy) that a test may alter.
class SysfsCopy {
 public:
  SysfsCopy() {
    std::string tmpl = ::testing::TempDir() + "/sysfs_discovery_XXXXXX";
    char* dir = ::mkdtemp(tmpl.data());
    EXPECT_NE(dir, nullptr);
    root_ = fs::path(tmpl) / "sys";
    fs::copy(kFixtureSysfs, root_, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  ~SysfsCopy() { fs::remove_all(root_.parent_path()); }
  SysfsCopy(const SysfsCopy&) = delete;
  SysfsCopy& operator=(const SysfsCopy&) = delete;

  std::string root() const { return root_.string(); }
  fs::path operator/(const std::string& rel) const { return root_ / rel; }

 private:
  fs::path root_;
};

// Sets every gids/<i> of a port to the zero GID, as the kernel shows an
// empty GID table.
void ClearGidTable(const fs::path& port_dir) {
  for (const auto& entry : fs::directory_iterator(port_dir / "gids")) {
    WriteFile(entry.path(), "0000:0000:0000:0000:0000:0000:0000:0000");
  }
}

TEST(SysfsDiscoveryTest, DiscoverListsEveryDeviceSortedByName) {
  absl::StatusOr<std::vector<RdmaDevice>> devices = DiscoveryAt(kFixtureSysfs).Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  std::vector<std::string> names;
  for (const RdmaDevice& d : *devices) names.push_back(d.name());
  EXPECT_THAT(names, ElementsAre("mlx5_0", "mlx5_1", "mlx5_2", "rxe0"));
}

TEST(SysfsDiscoveryTest, MissingClassDirectoryYieldsEmptyList) {
  SysfsCopy copy;
  fs::remove_all(copy / "class/infiniband");
  absl::StatusOr<std::vector<RdmaDevice>> devices = DiscoveryAt(copy.root()).Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_THAT(*devices, IsEmpty());

  devices = DiscoveryAt(copy.root() + "/no/such/root").Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_THAT(*devices, IsEmpty());
}

TEST(SysfsDiscoveryTest, DiscoverDeviceMatchesDiscover) {
  absl::StatusOr<std::vector<RdmaDevice>> all = DiscoveryAt(kFixtureSysfs).Discover();
  ASSERT_TRUE(all.ok()) << all.status();
  for (const RdmaDevice& expected : *all) {
    RdmaDevice one = MustDiscover(kFixtureSysfs, expected.name());
    EXPECT_EQ(one.SerializeAsString(), expected.SerializeAsString()) << expected.name();
  }
}

TEST(SysfsDiscoveryTest, DiscoverDeviceOfUnknownNameIsNotFound) {
  absl::StatusOr<RdmaDevice> device = DiscoveryAt(kFixtureSysfs).DiscoverDevice("mlx5_9");
  EXPECT_EQ(device.status().code(), absl::StatusCode::kNotFound) << device.status();
}

TEST(SysfsDiscoveryTest, DiscoverDeviceRejectsNamesThatAreNotDeviceNames) {
  for (const std::string name : {"", ".", "..", "../net/eth0", "mlx5_0/ports"}) {
    absl::StatusOr<RdmaDevice> device = DiscoveryAt(kFixtureSysfs).DiscoverDevice(name);
    EXPECT_EQ(device.status().code(), absl::StatusCode::kInvalidArgument) << "'" << name << "'";
  }
}

TEST(SysfsDiscoveryTest, Mlx5DeviceReportsFirmwareBoardGuidDriverAndPciFunction) {
  RdmaDevice d = MustDiscover(kFixtureSysfs, "mlx5_0");
  EXPECT_EQ(d.driver(), "mlx5_core");
  EXPECT_EQ(d.fw_version(), "22.36.1010");
  EXPECT_EQ(d.board_id(), "MT_0000000359");
  EXPECT_EQ(d.node_guid(), "b8ce:f603:005a:3ce0");
  EXPECT_EQ(d.pci_address(), "0000:3b:00.0");
  EXPECT_EQ(d.numa_node(), 0);
  EXPECT_EQ(d.parent_netdev(), "");

  EXPECT_EQ(MustDiscover(kFixtureSysfs, "mlx5_1").pci_address(), "0000:3b:00.1");
  EXPECT_EQ(MustDiscover(kFixtureSysfs, "mlx5_1").node_guid(), "b8ce:f603:005a:3ce1");
}

TEST(SysfsDiscoveryTest, NumaNodeComesFromThePciFunction) {
  EXPECT_EQ(MustDiscover(kFixtureSysfs, "mlx5_0").numa_node(), 0);
  EXPECT_EQ(MustDiscover(kFixtureSysfs, "mlx5_2").numa_node(), 1);
}

TEST(SysfsDiscoveryTest, HealthyPcieLinkIsNotDegraded) {
  RdmaDevice d = MustDiscover(kFixtureSysfs, "mlx5_0");
  EXPECT_DOUBLE_EQ(d.pcie().current_speed_gts(), 16.0);
  EXPECT_EQ(d.pcie().current_width(), 16u);
  EXPECT_DOUBLE_EQ(d.pcie().max_speed_gts(), 16.0);
  EXPECT_EQ(d.pcie().max_width(), 16u);
  EXPECT_FALSE(d.pcie().degraded());
}

TEST(SysfsDiscoveryTest, DegradedPcieLinkIsFlagged) {
  RdmaDevice d = MustDiscover(kFixtureSysfs, "mlx5_2");
  EXPECT_DOUBLE_EQ(d.pcie().current_speed_gts(), 8.0);
  EXPECT_EQ(d.pcie().current_width(), 4u);
  EXPECT_DOUBLE_EQ(d.pcie().max_speed_gts(), 16.0);
  EXPECT_EQ(d.pcie().max_width(), 16u);
  EXPECT_TRUE(d.pcie().degraded());
}

TEST(SysfsDiscoveryTest, PcieLinkDegradedWhenEitherWidthOrSpeedIsBelowMaxAndBothKnown) {
  struct Case {
    const char* cur_speed;
    const char* cur_width;
    const char* max_speed;
    const char* max_width;
    bool degraded;
  };
  const Case cases[] = {
      {"16.0 GT/s PCIe", "8", "16.0 GT/s PCIe", "16", true},  // narrow slot
      {"8.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "16", true},  // trained a gen lower
      {"16.0 GT/s PCIe", "16", "16.0 GT/s PCIe", "16", false},
      {"Unknown", "8", "16.0 GT/s PCIe", "16", true},    // width alone suffices
      {"Unknown", "16", "16.0 GT/s PCIe", "16", false},  // current speed unknown
      {"8.0 GT/s PCIe", "16", "Unknown", "16", false},   // max speed unknown
      {"8.0 GT/s PCIe", "0", "16.0 GT/s PCIe", "16", true},
      {"16.0 GT/s PCIe", "0", "16.0 GT/s PCIe", "16", false},  // width unknown
  };
  SysfsCopy copy;
  for (const Case& c : cases) {
    WriteFile(copy / kFn0Dir / "current_link_speed", c.cur_speed);
    WriteFile(copy / kFn0Dir / "current_link_width", c.cur_width);
    WriteFile(copy / kFn0Dir / "max_link_speed", c.max_speed);
    WriteFile(copy / kFn0Dir / "max_link_width", c.max_width);
    EXPECT_EQ(MustDiscover(copy.root(), "mlx5_0").pcie().degraded(), c.degraded)
        << c.cur_speed << " x" << c.cur_width << " of " << c.max_speed << " x" << c.max_width;
  }
}

TEST(SysfsDiscoveryTest, PortReportsStatePhysStateLinkLayerAndRate) {
  RdmaDevice d = MustDiscover(kFixtureSysfs, "mlx5_0");
  ASSERT_EQ(d.ports_size(), 1);
  const Port& p = d.ports(0);
  EXPECT_EQ(p.number(), 1u);
  EXPECT_EQ(p.state(), roced::v1::PORT_STATE_ACTIVE);
  EXPECT_EQ(p.phys_state(), "LinkUp");
  EXPECT_EQ(p.link_layer(), "Ethernet");
  EXPECT_DOUBLE_EQ(p.rate_gbps(), 100.0);
}

TEST(SysfsDiscoveryTest, DownPortAndDownNetdevAreReported) {
  Port p = FirstPort(MustDiscover(kFixtureSysfs, "mlx5_2"));
  EXPECT_EQ(p.state(), roced::v1::PORT_STATE_DOWN);
  EXPECT_EQ(p.phys_state(), "Disabled");
  EXPECT_EQ(p.netdev(), "ens2f0");
  EXPECT_EQ(p.netdev_operstate(), "down");
}

TEST(SysfsDiscoveryTest, GidTableListsOnlyPopulatedEntries) {
  EXPECT_THAT(GidIndices(FirstPort(MustDiscover(kFixtureSysfs, "mlx5_0"))),
              ElementsAre(0, 1, 2, 3));
  Port p = FirstPort(MustDiscover(kFixtureSysfs, "mlx5_2"));
  ASSERT_EQ(p.gids_size(), 1);
  EXPECT_EQ(p.gids(0).gid(), "fe80:0000:0000:0000:0e42:a1ff:fe7b:5230");
  EXPECT_EQ(p.gids(0).type(), roced::v1::GID_TYPE_ROCE_V2);
}

TEST(SysfsDiscoveryTest, GidTypesDistinguishRoceV1FromV2) {
  Port p = FirstPort(MustDiscover(kFixtureSysfs, "mlx5_0"));
  ASSERT_EQ(p.gids_size(), 4);
  std::vector<GidType> types;
  for (const auto& gid : p.gids()) types.push_back(gid.type());
  EXPECT_THAT(types, ElementsAre(roced::v1::GID_TYPE_ROCE_V1, roced::v1::GID_TYPE_ROCE_V2,
                                 roced::v1::GID_TYPE_ROCE_V1, roced::v1::GID_TYPE_ROCE_V2));
  EXPECT_EQ(p.gids(0).gid(), "fe80:0000:0000:0000:bace:f6ff:fe5a:3ce0");
  EXPECT_EQ(p.gids(0).gid(), p.gids(1).gid());
  EXPECT_EQ(p.gids(3).gid(), "0000:0000:0000:0000:0000:ffff:0a00:000b");
  for (const auto& gid : p.gids()) EXPECT_EQ(gid.netdev(), "ens1f0") << gid.index();
}

TEST(SysfsDiscoveryTest, GidIpAddressesAreDerivedFromTheGid) {
  Port p = FirstPort(MustDiscover(kFixtureSysfs, "mlx5_0"));
  std::vector<std::string> ips;
  for (const auto& gid : p.gids()) ips.push_back(gid.ip_address());
  EXPECT_THAT(ips, ElementsAre("fe80::bace:f6ff:fe5a:3ce0", "fe80::bace:f6ff:fe5a:3ce0",
                               "10.0.0.11", "10.0.0.11"));
}

TEST(SysfsDiscoveryTest, GidEntriesAreOrderedByIndexNumerically) {
  SysfsCopy copy;
  fs::path port = copy / kMlx50Dir / "ports/1";
  WriteFile(port / "gids/10", "0000:0000:0000:0000:0000:ffff:0a00:0063");
  WriteFile(port / "gid_attrs/types/10", "RoCE v2");
  WriteFile(port / "gid_attrs/ndevs/10", "ens1f0");
  Port p = FirstPort(MustDiscover(copy.root(), "mlx5_0"));
  EXPECT_THAT(GidIndices(p), ElementsAre(0, 1, 2, 3, 10));
  EXPECT_EQ(p.gids(4).ip_address(), "10.0.0.99");
}

TEST(SysfsDiscoveryTest, UnreadableGidTypeEntryIsSkipped) {
  SysfsCopy copy;
  fs::path types = copy / kMlx50Dir / "ports/1/gid_attrs/types";
  // Open fails (ENOENT) for entry 1; open succeeds but read() fails (EISDIR)
  // for entry 3, as read() fails with EINVAL on a real kernel.
  fs::remove(types / "1");
  fs::remove(types / "3");
  fs::create_directory(types / "3");
  Port p = FirstPort(MustDiscover(copy.root(), "mlx5_0"));
  EXPECT_THAT(GidIndices(p), ElementsAre(0, 2));
  EXPECT_EQ(p.netdev(), "ens1f0");
}

TEST(SysfsDiscoveryTest, PortNetdevAndAttributesComeFromGidNetdev) {
  Port p0 = FirstPort(MustDiscover(kFixtureSysfs, "mlx5_0"));
  EXPECT_EQ(p0.netdev(), "ens1f0");
  EXPECT_EQ(p0.netdev_mtu(), 9000u);
  EXPECT_EQ(p0.netdev_operstate(), "up");
  EXPECT_EQ(p0.mac_address(), "b8:ce:f6:5a:3c:e0");

  Port p1 = FirstPort(MustDiscover(kFixtureSysfs, "mlx5_1"));
  EXPECT_EQ(p1.netdev(), "ens1f1");
  EXPECT_EQ(p1.netdev_mtu(), 1500u);
  EXPECT_EQ(p1.mac_address(), "b8:ce:f6:5a:3c:e1");
}

TEST(SysfsDiscoveryTest, GidNetdevTakesPrecedenceOverPciFunctionNetdev) {
  SysfsCopy copy;
  // A VLAN netdev's GIDs name the VLAN device, not the function's netdev.
  for (const char* i : {"0", "1", "2", "3"}) {
    WriteFile(copy / kMlx50Dir / "ports/1/gid_attrs/ndevs" / i, "ens1f0.100");
  }
  fs::create_directory_symlink("../../devices/virtual/net/ens1f0.100",
                               copy / "class/net/ens1f0.100");
  WriteFile(copy / "devices/virtual/net/ens1f0.100/mtu", "8996");
  Port p = FirstPort(MustDiscover(copy.root(), "mlx5_0"));
  EXPECT_EQ(p.netdev(), "ens1f0.100");
  EXPECT_EQ(p.netdev_mtu(), 8996u);
}

TEST(SysfsDiscoveryTest, PortNetdevFallsBackToPciFunctionNetdev) {
  SysfsCopy copy;
  ClearGidTable(copy / kMlx51Dir / "ports/1");
  Port p = FirstPort(MustDiscover(copy.root(), "mlx5_1"));
  EXPECT_THAT(p.gids(), IsEmpty());
  EXPECT_EQ(p.netdev(), "ens1f1");
  EXPECT_EQ(p.netdev_mtu(), 1500u);
  EXPECT_EQ(p.netdev_operstate(), "up");
  EXPECT_EQ(p.active_mtu(), 1024u);
}

TEST(SysfsDiscoveryTest, FallbackNetdevIsMatchedToPortByDevPort) {
  SysfsCopy copy;
  // Two netdevs on one function (mlx4-style dual port): ens1d1 sorts first
  // but serves port 2.
  fs::path fn = copy / kFn0Dir;
  WriteFile(fn / "net/ens1d1/dev_port", "1");
  WriteFile(fn / "net/ens1d1/mtu", "4200");
  fs::create_directory_symlink(std::string("../../") + kFn0Dir + "/net/ens1d1",
                               copy / "class/net/ens1d1");
  fs::path port1 = copy / kMlx50Dir / "ports/1";
  fs::path port2 = copy / kMlx50Dir / "ports/2";
  ClearGidTable(port1);
  fs::copy(port1, port2, fs::copy_options::recursive);

  RdmaDevice d = MustDiscover(copy.root(), "mlx5_0");
  ASSERT_EQ(d.ports_size(), 2);
  EXPECT_EQ(d.ports(0).netdev(), "ens1f0");
  EXPECT_EQ(d.ports(1).number(), 2u);
  EXPECT_EQ(d.ports(1).netdev(), "ens1d1");
  EXPECT_EQ(d.ports(1).netdev_mtu(), 4200u);
}

TEST(SysfsDiscoveryTest, ActiveMtuDerivedFromNetdevMtu) {
  EXPECT_EQ(FirstPort(MustDiscover(kFixtureSysfs, "mlx5_0")).active_mtu(), 4096u);  // 9000
  EXPECT_EQ(FirstPort(MustDiscover(kFixtureSysfs, "mlx5_1")).active_mtu(), 1024u);  // 1500
  EXPECT_EQ(FirstPort(MustDiscover(kFixtureSysfs, "mlx5_2")).active_mtu(), 4096u);  // 4200
  EXPECT_EQ(FirstPort(MustDiscover(kFixtureSysfs, "rxe0")).active_mtu(), 1024u);    // 1500

  SysfsCopy copy;
  WriteFile(copy / "class/net/ens1f0/mtu", "4000");
  EXPECT_EQ(FirstPort(MustDiscover(copy.root(), "mlx5_0")).active_mtu(), 2048u);
}

TEST(SysfsDiscoveryTest, RxeDeviceHasNoPciAndReportsParentNetdev) {
  RdmaDevice d = MustDiscover(kFixtureSysfs, "rxe0");
  EXPECT_EQ(d.driver(), "rdma_rxe");
  EXPECT_EQ(d.parent_netdev(), "eth0");
  EXPECT_EQ(d.pci_address(), "");
  EXPECT_EQ(d.numa_node(), -1);
  EXPECT_EQ(d.fw_version(), "");
  EXPECT_EQ(d.node_guid(), "5054:00ff:fe12:3456");
  EXPECT_FALSE(d.has_pcie());

  Port p = FirstPort(d);
  EXPECT_EQ(p.state(), roced::v1::PORT_STATE_ACTIVE);
  EXPECT_DOUBLE_EQ(p.rate_gbps(), 10.0);
  EXPECT_EQ(p.netdev(), "eth0");
  EXPECT_EQ(p.netdev_mtu(), 1500u);
  EXPECT_EQ(p.mac_address(), "52:54:00:12:34:56");
  std::vector<std::string> ips;
  for (const auto& gid : p.gids()) ips.push_back(gid.ip_address());
  EXPECT_THAT(ips, ElementsAre("fe80::5054:ff:fe12:3456", "fe80::5054:ff:fe12:3456",
                               "192.168.77.11", "192.168.77.11"));
  EXPECT_EQ(p.gids(3).type(), roced::v1::GID_TYPE_ROCE_V2);
}

TEST(SysfsDiscoveryTest, RxeWithoutGidsUsesParentAsPortNetdev) {
  SysfsCopy copy;
  ClearGidTable(copy / kRxe0Dir / "ports/1");
  Port p = FirstPort(MustDiscover(copy.root(), "rxe0"));
  EXPECT_EQ(p.netdev(), "eth0");
  EXPECT_EQ(p.netdev_mtu(), 1500u);
}

TEST(SysfsDiscoveryTest, RxeOnOldKernelWithDeviceLinkIsStillSoftware) {
  SysfsCopy copy;
  // On 4.x kernels rxe hung below its netdev's parent device, so rxe0/device
  // pointed at the NIC's function.
  WriteFile(copy / "devices/pci0000:00/0000:00:03.0/numa_node", "0");
  fs::create_directory_symlink("../../../pci0000:00/0000:00:03.0", copy / kRxe0Dir / "device");
  ASSERT_TRUE(fs::exists(copy / "class/infiniband/rxe0/device/numa_node"));
  RdmaDevice d = MustDiscover(copy.root(), "rxe0");
  EXPECT_EQ(d.driver(), "rdma_rxe");
  EXPECT_EQ(d.pci_address(), "");
  EXPECT_EQ(d.numa_node(), -1);
}

TEST(SysfsDiscoveryTest, SubFunctionDeviceHasDriverButNoPciAddress) {
  SysfsCopy copy;
  // An mlx5 sub-function: the RDMA device hangs off an auxiliary-bus device
  // below the PCI function, not off the function itself.
  fs::path sf = copy / kFn0Dir / "mlx5_core.sf.2";
  fs::create_directories(copy / "bus/auxiliary/drivers/mlx5_core.sf");
  fs::create_directories(sf / "infiniband/mlx5_3");
  fs::create_directory_symlink("../../../../../bus/auxiliary/drivers/mlx5_core.sf", sf / "driver");
  fs::create_directory_symlink("../../../mlx5_core.sf.2", sf / "infiniband/mlx5_3/device");
  fs::create_directory_symlink(
      std::string("../../") + kFn0Dir + "/mlx5_core.sf.2/infiniband/mlx5_3",
      copy / "class/infiniband/mlx5_3");
  RdmaDevice d = MustDiscover(copy.root(), "mlx5_3");
  EXPECT_EQ(d.driver(), "mlx5_core.sf");
  EXPECT_EQ(d.pci_address(), "");
  EXPECT_FALSE(d.has_pcie());
}

TEST(SysfsDiscoveryTest, DeviceWithUnreadableAttributesIsStillListed) {
  SysfsCopy copy;
  fs::remove(copy / kMlx52Dir / "fw_ver");
  fs::remove(copy / kMlx52Dir / "board_id");
  fs::remove(copy / kMlx52Dir / "device");
  fs::remove_all(copy / kMlx52Dir / "ports");
  absl::StatusOr<std::vector<RdmaDevice>> devices = DiscoveryAt(copy.root()).Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 4u);
  const RdmaDevice& d = (*devices)[2];
  EXPECT_EQ(d.name(), "mlx5_2");
  EXPECT_EQ(d.fw_version(), "");
  EXPECT_EQ(d.board_id(), "");
  EXPECT_EQ(d.driver(), "");
  EXPECT_EQ(d.pci_address(), "");
  EXPECT_EQ(d.numa_node(), -1);
  EXPECT_EQ(d.node_guid(), "0c42:a103:007b:5230");
  EXPECT_THAT(d.ports(), IsEmpty());
}

TEST(SysfsDiscoveryTest, InfiniBandPortHasIbGidsAndNoNetdev) {
  SysfsCopy copy;
  fs::path port = copy / kMlx50Dir / "ports/1";
  WriteFile(port / "link_layer", "InfiniBand");
  WriteFile(port / "gid_attrs/types/0", "IB/RoCE v1");
  fs::remove_all(port / "gid_attrs/ndevs");
  Port p = FirstPort(MustDiscover(copy.root(), "mlx5_0"));
  ASSERT_GE(p.gids_size(), 1);
  EXPECT_EQ(p.gids(0).type(), roced::v1::GID_TYPE_IB);
  EXPECT_EQ(p.gids(0).ip_address(), "");
  EXPECT_EQ(p.gids(0).netdev(), "");
  EXPECT_EQ(p.netdev(), "");
  EXPECT_EQ(p.active_mtu(), 0u);
}

TEST(RoceMtuTest, LargestIbMtuThatFitsAfterKernelOverhead) {
  struct Case {
    uint32_t netdev_mtu;
    uint32_t roce_mtu;
  };
  const Case cases[] = {
      {9000, 4096}, {4200, 4096}, {4192, 4096}, {4191, 2048}, {2144, 2048},
      {2143, 1024}, {1500, 1024}, {1120, 1024}, {1119, 512},  {608, 512},
      {607, 256},   {352, 256},   {351, 0},     {96, 0},      {0, 0},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(RoceMtuForNetdevMtu(c.netdev_mtu), c.roce_mtu) << "netdev mtu " << c.netdev_mtu;
  }
}

TEST(SysfsParseTest, PcieSpeedInGts) {
  struct Case {
    const char* text;
    double gts;
  };
  const Case cases[] = {
      {"16.0 GT/s PCIe", 16.0},
      {"8.0 GT/s PCIe", 8.0},
      {"32.0 GT/s PCIe", 32.0},
      {"2.5 GT/s PCIe", 2.5},
      {"2.5 GT/s", 2.5},
      {"8 GT/s", 8.0},
      {"Unknown", 0},
      {"Unknown speed", 0},
      {"", 0},
      {"16.0", 0},
      {"nan GT/s", 0},
  };
  for (const Case& c : cases) {
    EXPECT_DOUBLE_EQ(ParsePcieSpeedGts(c.text), c.gts) << "'" << c.text << "'";
  }
}

TEST(SysfsParseTest, PortRateInGbps) {
  struct Case {
    const char* text;
    double gbps;
  };
  const Case cases[] = {
      {"100 Gb/sec (4X EDR)", 100},
      {"10 Gb/sec (1X QDR)", 10},
      {"2.5 Gb/sec (1X SDR)", 2.5},
      {"100 Gb/sec (2X HDR)", 100},
      {"400 Gb/sec (4X NDR)", 400},
      {"", 0},
      {"Gb/sec", 0},
      {"40", 0},
  };
  for (const Case& c : cases) {
    EXPECT_DOUBLE_EQ(ParseRateGbps(c.text), c.gbps) << "'" << c.text << "'";
  }
}

TEST(SysfsParseTest, PortStateFromKernelText) {
  struct Case {
    const char* text;
    PortState state;
  };
  const Case cases[] = {
      {"1: DOWN", roced::v1::PORT_STATE_DOWN},
      {"2: INIT", roced::v1::PORT_STATE_INIT},
      {"3: ARMED", roced::v1::PORT_STATE_ARMED},
      {"4: ACTIVE", roced::v1::PORT_STATE_ACTIVE},
      {"5: ACTIVE_DEFER", roced::v1::PORT_STATE_ACTIVE_DEFER},
      {"0: NOP", roced::v1::PORT_STATE_UNSPECIFIED},
      {"9: UNKNOWN", roced::v1::PORT_STATE_UNSPECIFIED},
      {"", roced::v1::PORT_STATE_UNSPECIFIED},
      {"ACTIVE", roced::v1::PORT_STATE_UNSPECIFIED},
  };
  for (const Case& c : cases) EXPECT_EQ(ParsePortState(c.text), c.state) << "'" << c.text << "'";
}

TEST(SysfsParseTest, GidTypeDependsOnLinkLayerForV1) {
  struct Case {
    const char* text;
    const char* link_layer;
    GidType type;
  };
  const Case cases[] = {
      {"RoCE v2", "Ethernet", roced::v1::GID_TYPE_ROCE_V2},
      {"IB/RoCE v1", "Ethernet", roced::v1::GID_TYPE_ROCE_V1},
      {"IB/RoCE v1", "InfiniBand", roced::v1::GID_TYPE_IB},
      {"RoCE v2\n", "Ethernet", roced::v1::GID_TYPE_ROCE_V2},
      {"", "Ethernet", roced::v1::GID_TYPE_UNSPECIFIED},
      {"iWARP", "Ethernet", roced::v1::GID_TYPE_UNSPECIFIED},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ParseGidType(c.text, c.link_layer), c.type) << c.text << " on " << c.link_layer;
  }
}

TEST(SysfsParseTest, GidToIpGivesDottedIpv4OrCompressedIpv6) {
  struct Case {
    const char* gid;
    const char* ip;
  };
  const Case cases[] = {
      {"0000:0000:0000:0000:0000:ffff:c0a8:4d01", "192.168.77.1"},
      {"0000:0000:0000:0000:0000:ffff:0a00:000b", "10.0.0.11"},
      {"fe80:0000:0000:0000:5054:00ff:fe12:3456", "fe80::5054:ff:fe12:3456"},
      {"2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"},
      {"0000:0000:0000:0000:0000:0000:0000:0000", ""},
      {"not a gid", ""},
      {"", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(GidToIp(c.gid), c.ip) << c.gid;
}


// An in-tree driver has no module version: the running kernel's release
// stands for it (read from the live /proc, compared with uname's).
TEST(SysfsDiscoveryTest, DriverVersionIsTheModulesElseTheKernelRelease) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "roced-drvver-XXXXXX").string();
  const std::filesystem::path dir = mkdtemp(tmpl.data());
  std::filesystem::create_directories(dir / "sys/module/mlx5_core");
  std::ofstream(dir / "sys/module/mlx5_core/version") << "23.10-1.1.9\n";
  Paths paths;
  paths.sysfs = (dir / "sys").string();
  EXPECT_EQ(DriverVersion(paths, "mlx5_core"), "23.10-1.1.9");
  FILE* p = popen("uname -r", "r");
  char release[256] = {};
  ASSERT_NE(fgets(release, sizeof(release), p), nullptr);
  pclose(p);
  EXPECT_EQ(DriverVersion(paths, "rdma_rxe") + "\n", std::string("kernel ") + release);
  paths.procfs = (dir / "proc").string();
  EXPECT_EQ(DriverVersion(paths, "rdma_rxe"), "") << "neither readable";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace roced::hal
