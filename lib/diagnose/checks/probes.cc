// The diagnose check `probes`: a peer whose latest RDMA probe failed is
// unreachable over RoCE.
#include "diagnose/check.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/ascii.h"
#include "model/defaults.h"

namespace roced::diagnose {

namespace {

void Probes(const Ctx& c) {
  for (const auto& p : c.in.state.probes()) {
    if (p.last_success()) continue;
    std::string kind = roced::v1::ProbeKind_Name(p.kind());
    absl::StrReplaceAll({{"PROBE_KIND_", ""}}, &kind);
    c.Add(roced::v1::SEVERITY_WARNING, p.peer(),
          absl::StrCat("the latest ", absl::AsciiStrToLower(kind), " probe failed: ", p.last_failure_reason()),
          "see `rocectl probes " + p.peer() + "` for the history and the failure detail",
          absl::StrCat("peer_unavailable: is roced running there and reachable on ", model::defaults::kGrpcPort,
                       "? connect_timeout/timeout: is RoCE traffic passing (GIDs, MTU, firewall on UDP 4791)? "
                       "wc_error: the counters in the result"));
  }
}

const char* NoProbeResult(const Inputs& in) {
  return in.state.probes().empty() ? "no probe has run yet" : nullptr;
}

}  // namespace

const Check kProbesCheck = {{"probes", "peers whose latest probe failed",
                        "the latest probe of each peer (state)",
                        "a peer whose latest RDMA probe failed is unreachable over RoCE"},
                       Probes, NoProbeResult};

}  // namespace roced::diagnose
