// A netdev's carrier change count: <sysfs>/class/net/<netdev>/carrier_changes,
// the kernel's count of carrier transitions (up->down and down->up) since
// the netdev was created. A flapping link (bad cable or optic, a switch
// port error-disabling and recovering) shows as this number climbing; the
// count survives missed netlink events, so polling it misses no flap.
//
// Note that sysfs shows the netdevs of the network namespace it was mounted
// in, not of the reading thread. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "hal/paths.h"

namespace roced::hal {

// NOT_FOUND when the netdev (or the attribute: kernels before 3.15) is
// absent; INVALID_ARGUMENT naming the file when its text is not a number.
absl::StatusOr<uint64_t> ReadCarrierChanges(const Paths& paths, const std::string& netdev);

}  // namespace roced::hal
