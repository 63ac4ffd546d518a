#include "probe/reason.h"

#include <infiniband/verbs.h>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace roced::probe {

namespace {
constexpr absl::string_view kReasonPayloadUrl = "type.googleapis.com/roced.probe.Reason";
}  // namespace

absl::Status WithReason(absl::Status status, absl::string_view reason) {
  if (status.ok()) return status;
  status.SetPayload(kReasonPayloadUrl, absl::Cord(reason));
  return status;
}

absl::Status ProbeError(absl::StatusCode code, absl::string_view reason,
                        absl::string_view message) {
  return WithReason(absl::Status(code, message), reason);
}

std::string ReasonOf(const absl::Status& status) {
  if (status.ok()) return "";
  absl::optional<absl::Cord> payload = status.GetPayload(kReasonPayloadUrl);
  if (!payload.has_value()) return std::string(kReasonInternal);
  return std::string(*payload);
}

std::string WcErrorReason(int wc_status) {
  return absl::StrCat("wc_error:", ibv_wc_status_str(static_cast<ibv_wc_status>(wc_status)));
}

absl::string_view PeerRpcReason(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return kReasonPeerUnavailable;
    case absl::StatusCode::kResourceExhausted:
      return kReasonPeerBusy;
    case absl::StatusCode::kFailedPrecondition:
      return kReasonPeerNoDevice;
    case absl::StatusCode::kUnimplemented:
      return kReasonPeerUnsupported;
    default:
      return kReasonPeerError;
  }
}

}  // namespace roced::probe
