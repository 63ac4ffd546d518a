// Device discovery as the agent runs it: sysfs for the device tree, plus
// the open libibverbs contexts (on the live kernel) for what only verbs
// knows, and the diff that turns two discoveries into device events.
//
// Threads: Discover() is called by the discovery loop (and at start-up);
// CloseAll() at shutdown. VerbsDevices is thread-safe; SysfsDiscovery is
// stateless.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hal/paths.h"
#include "hal/sysfs_discovery.h"
#include "hal/verbs_devices.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::agent {

class DeviceDiscovery {
 public:
  // `use_verbs`: own a verbs context per device (the live kernel only: the
  // devices of a fixture tree do not exist for libibverbs).
  // With verbs, the GIDs of an open device come from one
  // ibv_query_gid_table call instead of a read of every gids/ slot.
  DeviceDiscovery(hal::Paths paths, bool use_verbs)
      : sysfs_(std::move(paths),
               use_verbs ? hal::SysfsDiscovery::GidReader(
                               [this](const std::string& device, uint32_t port) {
                                 return verbs_.PortGids(device, port);
                               })
                         : nullptr),
        use_verbs_(use_verbs) {}

  // Re-lists devices (opening and closing verbs contexts as they come and
  // go) and returns them, enriched with the verbs view.
  absl::StatusOr<std::vector<roced::v1::RdmaDevice>> Discover();
  void CloseAll() { verbs_.CloseAll(); }

 private:
  hal::SysfsDiscovery sysfs_;
  hal::VerbsDevices verbs_;
  const bool use_verbs_;
};

// The device events that take `before` to `after` (devices keyed by name):
// ADDED (with port count and driver), CHANGED (detail: `reason`), REMOVED,
// in `after`'s order then removals in name order. Pure.
std::vector<roced::v1::StateEvent> DiffDevices(const std::vector<roced::v1::RdmaDevice>& before,
                                               const std::vector<roced::v1::RdmaDevice>& after,
                                               const std::string& reason);

}  // namespace roced::agent
