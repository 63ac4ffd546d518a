// `rocectl probe PEER` (run an RDMA probe now and print it the way perftest
// users read ib_write_lat / ib_write_bw) and `rocectl probes [PEER]` (the
// agent's recent results).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "roced/v1/agent.pb.h"
#include "tools/rocectl/commands.h"
#include "util/args.h"

namespace roced::ctl {

struct ProbeFlags {
  std::string kind;  // "latency" (default) or "bandwidth"; filter for `probes`
  uint64_t size = 0;        // 0: the agent's configured default
  uint64_t iterations = 0;  // 0: the agent's configured default
  absl::Duration duration = absl::ZeroDuration();
  uint64_t qps = 0;
  std::string tclass;  // empty: the agent's default
  bool busy_poll = false;
  uint64_t limit = 20;
};
// `command` is "probe" or "probes": each gets only its own flags.
void RegisterProbeFlags(const std::string& command, ProbeFlags* flags, util::ArgParser* parser);

int RunProbeCommand(const CommandContext& ctx, const ProbeFlags& flags,
                    const std::vector<std::string>& args);
int RunProbesCommand(const CommandContext& ctx, const ProbeFlags& flags,
                     const std::vector<std::string>& args);

// Parses --kind ("latency", "lat", "bandwidth", "bw"); empty gives
// `empty_kind`.
absl::StatusOr<roced::v1::ProbeKind> ParseProbeKind(const std::string& text,
                                                    roced::v1::ProbeKind empty_kind);

// The result as perftest prints it: a header, the figures row under
// ib_write_lat's (t_min, t_max, t_typical, t_avg, t_stdev, percentiles) or
// ib_write_bw's (BW peak, BW average, MsgRate) column names, counter
// deltas, or the failure reason and detail.
std::string ProbeResultText(const roced::v1::ProbeResult& result);

// One line per result, newest first.
std::string ProbeHistoryTable(const roced::v1::ListProbeResultsResponse& response);

// "latency", "bandwidth".
const char* ProbeKindText(roced::v1::ProbeKind kind);

}  // namespace roced::ctl
