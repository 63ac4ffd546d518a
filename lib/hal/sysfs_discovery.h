// Discovers RDMA devices from sysfs: RDMA device -> netdev -> PCI function,
// ports with state, rate and link layer, the populated GID table with type,
// netdev and IP, firmware, NUMA node, and the PCIe link (current vs max).
//
// Reads only files under Paths::sysfs, so it runs the same on the live
// kernel and on a fixture tree. Stateless and thread-safe.
#pragma once

#include <functional>
#include <optional>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hal/paths.h"
#include "roced/v1/state.pb.h"

namespace roced::hal {

class SysfsDiscovery {
 public:
  // A port's GIDs from elsewhere than its gids/ files: libibverbs'
  // ibv_query_gid_table answers for every slot in one call, where sysfs
  // takes a read per slot (rxe has 1024, mlx5 255 a port: the bulk of a
  // discovery pass). nullopt: read the files.
  using GidReader = std::function<std::optional<std::vector<roced::v1::Gid>>(
      const std::string& device, uint32_t port)>;

  explicit SysfsDiscovery(Paths paths, GidReader gids = nullptr)
      : paths_(std::move(paths)), gids_(std::move(gids)) {}

  // All RDMA devices under <sysfs>/class/infiniband, sorted by name. An
  // absent class directory (no RDMA stack loaded) yields an empty list, not
  // an error. A device whose attributes cannot be read is still listed with
  // what could be read; per-file errors are not fatal.
  absl::StatusOr<std::vector<roced::v1::RdmaDevice>> Discover() const;

  // One device by name; NOT_FOUND if absent, INVALID_ARGUMENT for a name
  // that is not a plain directory entry (empty, "..", containing "/").
  absl::StatusOr<roced::v1::RdmaDevice> DiscoverDevice(const std::string& name) const;

 private:
  Paths paths_;
  GidReader gids_;
};

// The RoCE active MTU the kernel derives from a netdev MTU (ib_core's
// iboe_get_mtu): the largest IB MTU (256..4096) that fits the netdev MTU
// minus the RoCE headers. 0 when even 256 does not fit.
uint32_t RoceMtuForNetdevMtu(uint32_t netdev_mtu);

// Parses sysfs "current_link_speed" text ("16.0 GT/s PCIe", "8 GT/s",
// "Unknown") into GT/s; 0 when unknown.
double ParsePcieSpeedGts(const std::string& text);

// Parses a port "rate" file ("100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)")
// into Gb/s; 0 when unknown.
double ParseRateGbps(const std::string& text);

// Parses a port "phys_state" file ("5: LinkUp") to its name ("LinkUp");
// text without a "N: " prefix is returned whole.
std::string ParsePhysState(const std::string& text);

// Whether a device link's target names a PCI function: dddd:bb:dd.f in hex
// (as the `device` link of a PCI NIC ends), function 0-7.
bool LooksLikePciBdf(absl::string_view name);

// Parses a port "state" file ("4: ACTIVE").
roced::v1::PortState ParsePortState(const std::string& text);

// Maps a gid_attrs/types entry ("RoCE v2", "IB/RoCE v1") to a GidType;
// `link_layer` decides whether "IB/RoCE v1" means IB or RoCE v1.
roced::v1::GidType ParseGidType(const std::string& text, const std::string& link_layer);

// The IP a GID stands for: dotted IPv4 for ::ffff:a.b.c.d, compressed IPv6
// otherwise (fe80:: link-local GIDs included); empty for the all-zero GID.
std::string GidToIp(const std::string& gid_text);

// The version of a device's kernel driver, for telling an upgrade: the
// module's <sysfs>/module/<driver>/version where it has one (out-of-tree
// drivers such as MLNX_OFED's set it), else "kernel <release>" from
// <procfs>/sys/kernel/osrelease (an in-tree driver changes with the kernel).
// Empty when neither can be read.
std::string DriverVersion(const Paths& paths, const std::string& driver);

}  // namespace roced::hal
