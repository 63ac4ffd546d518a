// Why a probe failed, as a short machine-readable reason ("peer_unavailable",
// "wc_error:transport retry counter exceeded", ...) carried on absl::Status
// as a payload, so every layer can return a plain absl::Status and the
// runtime still knows which reason to record in ProbeResult.failure_reason
// and in roced_probe_failures_total{reason}.
//
// All functions are pure and thread-safe.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace roced::probe {

// The reasons the probe engine and runtime produce. wc_error:<status> is
// built by WcErrorReason().
inline constexpr absl::string_view kReasonPeerUnavailable = "peer_unavailable";
inline constexpr absl::string_view kReasonPeerBusy = "peer_busy";
inline constexpr absl::string_view kReasonPeerNoDevice = "peer_device_unavailable";
inline constexpr absl::string_view kReasonPeerUnsupported = "peer_unsupported";
inline constexpr absl::string_view kReasonPeerError = "peer_error";
inline constexpr absl::string_view kReasonConnectTimeout = "connect_timeout";
inline constexpr absl::string_view kReasonTimeout = "timeout";
inline constexpr absl::string_view kReasonDeviceUnavailable = "device_unavailable";
inline constexpr absl::string_view kReasonNoGid = "no_gid";
inline constexpr absl::string_view kReasonLocalError = "local_error";
inline constexpr absl::string_view kReasonCancelled = "cancelled";
inline constexpr absl::string_view kReasonInternal = "internal";

// Returns `status` (which must not be OK) with `reason` attached.
absl::Status WithReason(absl::Status status, absl::string_view reason);

// Shorthand: a status of `code` with `message` and `reason`.
absl::Status ProbeError(absl::StatusCode code, absl::string_view reason,
                        absl::string_view message);

// The reason attached to `status`; "internal" when none is (a bug: every
// failure path attaches one) and "" for OK.
std::string ReasonOf(const absl::Status& status);

// "wc_error:" + ibv_wc_status_str(status), e.g.
// "wc_error:transport retry counter exceeded".
std::string WcErrorReason(int wc_status);

// The reason for a failed call to the peer agent's ProbePeer service, by
// the call's status code (gRPC and absl share their numbering): the agent
// down, unreachable or not answering in time -> peer_unavailable; at its
// endpoint limit -> peer_busy; without a usable RDMA device ->
// peer_device_unavailable; an agent without probes -> peer_unsupported.
absl::string_view PeerRpcReason(absl::StatusCode code);

}  // namespace roced::probe
