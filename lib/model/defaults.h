// Every default of roced written once: the agent's flags and their --help,
// the option structs of its parts, rocectl and the benchmarks read these
// (the bounds a config is checked against are in config_limits.h and
// probe_limits.h).
#pragma once

#include <cstdint>

#include "absl/time/time.h"

namespace roced::model::defaults {

// The agent's gRPC API on TCP (mutual TLS) and the Prometheus endpoint.
inline constexpr uint16_t kGrpcPort = 7471;
inline constexpr uint16_t kMetricsPort = 9471;
inline constexpr char kGrpcListen[] = "[::]:7471";
inline constexpr char kMetricsListen[] = "[::]:9471";
// The local API (the unix socket rocectl talks to by default).
inline constexpr char kSocketPath[] = "/run/roced/roced.sock";

// The config file, and where the agent keeps what survives a restart.
inline constexpr char kConfigPath[] = "/etc/roced/roced.yaml";
inline constexpr char kStateDir[] = "/var/lib/roced";

// The kernel's trees every file path hangs off (--sysfs-root and friends).
inline constexpr char kSysfsRoot[] = "/sys";
inline constexpr char kProcfsRoot[] = "/proc";
inline constexpr char kConfigfsRoot[] = "/sys/kernel/config";
inline constexpr char kDebugfsRoot[] = "/sys/kernel/debug";

// How often the agent rediscovers devices without a netlink event, and how
// often reconcile.interval re-checks the node when the config leaves it out.
inline constexpr absl::Duration kDiscoveryInterval = absl::Seconds(60);
inline constexpr absl::Duration kReconcileInterval = absl::Seconds(30);

// pfc_watchdog's poll interval, detection and restoration times when the
// config leaves them out.
inline constexpr absl::Duration kWatchdogPollInterval = absl::Milliseconds(100);
inline constexpr absl::Duration kWatchdogDetectionTime = absl::Milliseconds(200);
inline constexpr absl::Duration kWatchdogRestorationTime = absl::Milliseconds(400);

// The fleet mesh's result window (--mesh-window) and its DSCP (--mesh-dscps).
inline constexpr absl::Duration kMeshWindow = absl::Seconds(60);
inline constexpr char kMeshDscps[] = "26";

// A config applied with a confirm policy is provisional for the policy's
// window and this much more: the ConfirmGuard decides at the window's end,
// and the deadline is the backstop should it not (a rollback with reason
// confirm_timeout).
inline constexpr absl::Duration kConfirmPolicyGrace = absl::Seconds(30);

}  // namespace roced::model::defaults
