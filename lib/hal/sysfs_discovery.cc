#include "hal/sysfs_discovery.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "util/fs.h"

namespace roced::hal {
namespace {

using ::roced::v1::Gid;
using ::roced::v1::GidType;
using ::roced::v1::PcieLink;
using ::roced::v1::Port;
using ::roced::v1::PortState;
using ::roced::v1::RdmaDevice;

constexpr absl::string_view kEthernet = "Ethernet";
constexpr absl::string_view kInfiniBand = "InfiniBand";

// An attribute's text, or empty when it is absent or unreadable: discovery
// reports what it can and leaves the rest unset.
std::string ReadAttr(const std::string& path) {
  absl::StatusOr<std::string> text = util::ReadFileTrimmed(path);
  return text.ok() ? *std::move(text) : std::string();
}

std::optional<uint32_t> ReadUint(const std::string& path) {
  uint32_t value = 0;
  if (!absl::SimpleAtoi(ReadAttr(path), &value)) return std::nullopt;
  return value;
}

absl::string_view Basename(absl::string_view path) {
  size_t slash = path.find_last_of('/');
  return slash == absl::string_view::npos ? path : path.substr(slash + 1);
}

// The last path component of a symlink's target ("mlx5_core" for
// ".../drivers/mlx5_core"); empty when `path` is not a readable symlink.
std::string LinkBasename(const std::string& path) {
  absl::StatusOr<std::string> target = util::ReadLink(path);
  if (!target.ok()) return "";
  return std::string(Basename(absl::StripSuffix(*target, "/")));
}

bool AllHex(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isxdigit(static_cast<unsigned char>(c));
  });
}


// Entries of a sysfs table directory (ports/, gids/) whose names are
// numbers, in numeric order: ListDir's lexical order would put 10 before 2.
std::vector<std::pair<uint32_t, std::string>> NumericEntries(const std::string& dir) {
  std::vector<std::pair<uint32_t, std::string>> out;
  absl::StatusOr<std::vector<std::string>> names = util::ListDir(dir);
  if (!names.ok()) return out;
  for (std::string& name : *names) {
    uint32_t index = 0;
    if (absl::SimpleAtoi(name, &index)) out.emplace_back(index, std::move(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<in6_addr> ParseGid(const std::string& text) {
  in6_addr addr;
  if (inet_pton(AF_INET6, text.c_str(), &addr) != 1) return std::nullopt;
  return addr;
}

bool IsZero(const in6_addr& addr) {
  return std::all_of(std::begin(addr.s6_addr), std::end(addr.s6_addr),
                     [](uint8_t b) { return b == 0; });
}

bool IsV4Mapped(const in6_addr& addr) {
  return std::all_of(addr.s6_addr, addr.s6_addr + 10, [](uint8_t b) { return b == 0; }) &&
         addr.s6_addr[10] == 0xff && addr.s6_addr[11] == 0xff;
}

// Fills the hardware side of a device from its `device` link: driver, NUMA
// node and, for a PCI function, its address and PCIe link.
void ReadParentDevice(const std::string& device_dir, RdmaDevice* device) {
  std::string function = LinkBasename(device_dir);
  if (function.empty()) return;
  device->set_driver(LinkBasename(device_dir + "/driver"));
  int32_t numa = -1;
  if (absl::SimpleAtoi(ReadAttr(device_dir + "/numa_node"), &numa)) device->set_numa_node(numa);
  // A non-PCI parent (an mlx5 sub-function on the auxiliary bus, a platform
  // device) has a driver and maybe a NUMA node, but no PCI address or link.
  if (!LooksLikePciBdf(function)) return;
  device->set_pci_address(function);

  PcieLink* pcie = device->mutable_pcie();
  pcie->set_current_speed_gts(ParsePcieSpeedGts(ReadAttr(device_dir + "/current_link_speed")));
  pcie->set_max_speed_gts(ParsePcieSpeedGts(ReadAttr(device_dir + "/max_link_speed")));
  pcie->set_current_width(ReadUint(device_dir + "/current_link_width").value_or(0));
  pcie->set_max_width(ReadUint(device_dir + "/max_link_width").value_or(0));
  bool narrower = pcie->current_width() > 0 && pcie->max_width() > 0 &&
                  pcie->current_width() < pcie->max_width();
  bool slower = pcie->current_speed_gts() > 0 && pcie->max_speed_gts() > 0 &&
                pcie->current_speed_gts() < pcie->max_speed_gts();
  pcie->set_degraded(narrower || slower);
}

void ReadGids(const std::string& port_dir, Port* port) {
  // IB GIDs are subnet prefix + port GUID, not IP addresses.
  bool has_ip = port->link_layer() != kInfiniBand;
  for (const auto& [index, name] : NumericEntries(port_dir + "/gids")) {
    std::string text = ReadAttr(port_dir + "/gids/" + name);
    std::optional<in6_addr> addr = ParseGid(text);
    // The kernel shows every slot of the table and reads empty ones as zero.
    if (!addr.has_value() || IsZero(*addr)) continue;
    // Reading the type of an empty or just-deleted entry fails (EINVAL):
    // such an entry is not usable, whatever gids/<i> showed a moment ago.
    absl::StatusOr<std::string> type = util::ReadFileTrimmed(port_dir + "/gid_attrs/types/" + name);
    if (!type.ok()) continue;
    Gid* gid = port->add_gids();
    gid->set_index(index);
    gid->set_gid(text);
    gid->set_type(ParseGidType(*type, port->link_layer()));
    // IB entries have no netdev; their ndevs/<i> read fails and stays empty.
    gid->set_netdev(ReadAttr(port_dir + "/gid_attrs/ndevs/" + name));
    if (has_ip) gid->set_ip_address(GidToIp(text));
  }
}

// The netdev of an Ethernet port when no GID names one: rxe's parent, else
// the PCI function's netdev. A function with several netdevs (mlx4's two
// ports share one function) is matched on dev_port, which counts from 0.
std::string FallbackNetdev(const std::string& dev_dir, const RdmaDevice& device,
                           uint32_t port_number) {
  if (!device.parent_netdev().empty()) return device.parent_netdev();
  std::string net_dir = dev_dir + "/device/net";
  absl::StatusOr<std::vector<std::string>> names = util::ListDir(net_dir);
  if (!names.ok() || names->empty()) return "";
  if (names->size() > 1) {
    for (const std::string& name : *names) {
      std::optional<uint32_t> dev_port = ReadUint(absl::StrCat(net_dir, "/", name, "/dev_port"));
      if (dev_port.has_value() && *dev_port + 1 == port_number) return name;
    }
  }
  return names->front();
}

Port ReadPort(const std::string& sysfs, const std::string& dev_dir, const RdmaDevice& device,
              uint32_t number, const std::string& port_dir,
              const SysfsDiscovery::GidReader& gid_reader) {
  Port port;
  port.set_number(number);
  port.set_state(ParsePortState(ReadAttr(port_dir + "/state")));
  port.set_phys_state(ParsePhysState(ReadAttr(port_dir + "/phys_state")));
  port.set_link_layer(ReadAttr(port_dir + "/link_layer"));
  port.set_rate_gbps(ParseRateGbps(ReadAttr(port_dir + "/rate")));
  std::optional<std::vector<Gid>> gids;
  if (gid_reader) gids = gid_reader(device.name(), number);
  if (gids.has_value()) {
    for (Gid& g : *gids) *port.add_gids() = std::move(g);
  } else {
    ReadGids(port_dir, &port);
  }

  // An IB port carries no RoCE; the IPoIB netdev under its PCI function
  // would only lend it a wrong MTU.
  if (port.link_layer() == kInfiniBand) return port;

  std::string netdev;
  for (const Gid& gid : port.gids()) {
    if (!gid.netdev().empty()) {
      netdev = gid.netdev();
      break;
    }
  }
  if (netdev.empty()) netdev = FallbackNetdev(dev_dir, device, number);
  if (netdev.empty()) return port;
  port.set_netdev(netdev);

  std::string net_dir = absl::StrCat(sysfs, "/class/net/", netdev);
  std::optional<uint32_t> mtu = ReadUint(net_dir + "/mtu");
  if (mtu.has_value()) {
    port.set_netdev_mtu(*mtu);
    port.set_active_mtu(RoceMtuForNetdevMtu(*mtu));
  }
  port.set_netdev_operstate(ReadAttr(net_dir + "/operstate"));
  port.set_mac_address(ReadAttr(net_dir + "/address"));
  return port;
}

RdmaDevice ReadDevice(const std::string& sysfs, const std::string& name,
                      const SysfsDiscovery::GidReader& gid_reader) {
  // class/infiniband/<name> is a symlink into devices/; the kernel resolves
  // it, and the relative links under it, on every open.
  std::string dev_dir = absl::StrCat(sysfs, "/class/infiniband/", name);
  RdmaDevice device;
  device.set_name(name);
  device.set_numa_node(-1);
  device.set_fw_version(ReadAttr(dev_dir + "/fw_ver"));
  device.set_node_guid(ReadAttr(dev_dir + "/node_guid"));
  device.set_board_id(ReadAttr(dev_dir + "/board_id"));
  device.set_parent_netdev(ReadAttr(dev_dir + "/parent"));

  // Only rdma_rxe creates a `parent` attribute, so it is what marks a
  // software device. Neither node_type ("1: CA" for rxe and mlx5 alike) nor
  // the `device` link tells: older kernels (4.x) registered rxe as a child
  // of its netdev's parent, so device/ there is the NIC under rxe
  // (virtio-pci, say), whose driver and PCI address are not rxe's.
  if (!device.parent_netdev().empty()) {
    device.set_driver("rdma_rxe");
  } else {
    ReadParentDevice(dev_dir + "/device", &device);
  }

  for (const auto& [number, port_name] : NumericEntries(dev_dir + "/ports")) {
    *device.add_ports() =
        ReadPort(sysfs, dev_dir, device, number, absl::StrCat(dev_dir, "/ports/", port_name),
                 gid_reader);
  }
  return device;
}

// First numeric token of `text` when the next token is `unit`
// ("16.0 GT/s PCIe", "100 Gb/sec (4X EDR)"); 0 otherwise.
double ParseLeadingNumber(const std::string& text, absl::string_view unit) {
  std::vector<absl::string_view> tokens = absl::StrSplit(text, ' ', absl::SkipEmpty());
  double value = 0;
  if (tokens.size() < 2 || tokens[1] != unit || !absl::SimpleAtod(tokens[0], &value) ||
      !std::isfinite(value) || value < 0) {
    return 0;
  }
  return value;
}

}  // namespace

absl::StatusOr<std::vector<RdmaDevice>> SysfsDiscovery::Discover() const {
  std::string class_dir = paths_.sysfs + "/class/infiniband";
  absl::StatusOr<std::vector<std::string>> names = util::ListDir(class_dir);
  if (!names.ok()) {
    if (absl::IsNotFound(names.status())) return std::vector<RdmaDevice>();
    return names.status();
  }
  std::vector<RdmaDevice> devices;
  devices.reserve(names->size());
  for (const std::string& name : *names) devices.push_back(ReadDevice(paths_.sysfs, name, gids_));
  return devices;
}

absl::StatusOr<RdmaDevice> SysfsDiscovery::DiscoverDevice(const std::string& name) const {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("invalid RDMA device name \"", name, "\""));
  }
  std::string path = absl::StrCat(paths_.sysfs, "/class/infiniband/", name);
  if (!util::PathExists(path)) {
    return absl::NotFoundError(absl::StrCat("RDMA device ", name, " not found (no ", path, ")"));
  }
  return ReadDevice(paths_.sysfs, name, gids_);
}

uint32_t RoceMtuForNetdevMtu(uint32_t netdev_mtu) {
  // iboe_get_mtu (include/rdma/ib_addr.h) reserves GRH 40 + UDP 8 + BTH 12 +
  // XRC ext 4 + AtomicETH 28 + ICRC 4 = 96 bytes, a worst case rather than
  // any one packet's headers: a 4096 path MTU needs a netdev MTU of at least
  // 4192, which is why RoCE fabrics are set to 4200 rather than 4096.
  constexpr uint32_t kRoceOverheadBytes = 40 + 8 + 12 + 4 + 28 + 4;
  if (netdev_mtu < kRoceOverheadBytes) return 0;
  uint32_t room = netdev_mtu - kRoceOverheadBytes;
  for (uint32_t ib_mtu : {4096u, 2048u, 1024u, 512u, 256u}) {
    if (room >= ib_mtu) return ib_mtu;
  }
  return 0;
}

// The domain may be wider than four digits (VMD domains are 10000 and up).
bool LooksLikePciBdf(absl::string_view name) {
  std::vector<absl::string_view> parts = absl::StrSplit(name, ':');
  if (parts.size() != 3) return false;
  std::pair<absl::string_view, absl::string_view> dev_fn =
      absl::StrSplit(parts[2], absl::MaxSplits('.', 1));
  return parts[0].size() >= 4 && AllHex(parts[0]) && parts[1].size() == 2 && AllHex(parts[1]) &&
         dev_fn.first.size() == 2 && AllHex(dev_fn.first) && dev_fn.second.size() == 1 &&
         dev_fn.second[0] >= '0' && dev_fn.second[0] <= '7';
}

std::string ParsePhysState(const std::string& text) {
  std::pair<absl::string_view, absl::string_view> phys = absl::StrSplit(text, absl::MaxSplits(": ", 1));
  return std::string(phys.second.empty() ? phys.first : phys.second);
}

double ParsePcieSpeedGts(const std::string& text) { return ParseLeadingNumber(text, "GT/s"); }

double ParseRateGbps(const std::string& text) { return ParseLeadingNumber(text, "Gb/sec"); }

PortState ParsePortState(const std::string& text) {
  std::pair<absl::string_view, absl::string_view> parts =
      absl::StrSplit(text, absl::MaxSplits(':', 1));
  int code = -1;
  if (!absl::SimpleAtoi(parts.first, &code)) return roced::v1::PORT_STATE_UNSPECIFIED;
  switch (code) {
    case 1:
      return roced::v1::PORT_STATE_DOWN;
    case 2:
      return roced::v1::PORT_STATE_INIT;
    case 3:
      return roced::v1::PORT_STATE_ARMED;
    case 4:
      return roced::v1::PORT_STATE_ACTIVE;
    case 5:
      return roced::v1::PORT_STATE_ACTIVE_DEFER;
    default:
      return roced::v1::PORT_STATE_UNSPECIFIED;
  }
}

GidType ParseGidType(const std::string& text, const std::string& link_layer) {
  absl::string_view type = absl::StripAsciiWhitespace(text);
  if (type == "RoCE v2") return roced::v1::GID_TYPE_ROCE_V2;
  // The kernel names IB and RoCE v1 entries alike; only the port tells them
  // apart.
  if (type == "IB/RoCE v1") {
    return link_layer == kEthernet ? roced::v1::GID_TYPE_ROCE_V1 : roced::v1::GID_TYPE_IB;
  }
  return roced::v1::GID_TYPE_UNSPECIFIED;
}

std::string GidToIp(const std::string& gid_text) {
  std::optional<in6_addr> addr = ParseGid(std::string(absl::StripAsciiWhitespace(gid_text)));
  if (!addr.has_value() || IsZero(*addr)) return "";
  char buf[INET6_ADDRSTRLEN];
  if (IsV4Mapped(*addr)) {
    if (inet_ntop(AF_INET, &addr->s6_addr[12], buf, sizeof(buf)) == nullptr) return "";
  } else if (inet_ntop(AF_INET6, &*addr, buf, sizeof(buf)) == nullptr) {
    return "";
  }
  return buf;
}

std::string DriverVersion(const Paths& paths, const std::string& driver) {
  if (!driver.empty()) {
    std::string module = ReadAttr(absl::StrCat(paths.sysfs, "/module/", driver, "/version"));
    if (!module.empty()) return module;
  }
  std::string release = ReadAttr(paths.procfs + "/sys/kernel/osrelease");
  return release.empty() ? "" : "kernel " + release;
}

}  // namespace roced::hal
