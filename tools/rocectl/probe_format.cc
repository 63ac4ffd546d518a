// rocectl's renderings of probe results (no RPCs here, so tests link it
// without the CLI's main).
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "tools/rocectl/probe_cmd.h"

namespace roced::ctl {

namespace {

const char* KindName(roced::v1::ProbeKind kind) {
  switch (kind) {
    case roced::v1::PROBE_KIND_LATENCY: return "latency";
    case roced::v1::PROBE_KIND_BANDWIDTH: return "bandwidth";
    default: return "?";
  }
}

absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

absl::Duration FromProto(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

std::string Rule() { return std::string(100, '-') + "\n"; }

}  // namespace

const char* ProbeKindText(roced::v1::ProbeKind kind) { return KindName(kind); }

absl::StatusOr<roced::v1::ProbeKind> ParseProbeKind(const std::string& text,
                                                    roced::v1::ProbeKind empty_kind) {
  const std::string k = absl::AsciiStrToLower(text);
  if (k.empty()) return empty_kind;
  if (k == "latency" || k == "lat") return roced::v1::PROBE_KIND_LATENCY;
  if (k == "bandwidth" || k == "bw") return roced::v1::PROBE_KIND_BANDWIDTH;
  return absl::InvalidArgumentError(
      absl::StrCat("--kind: '", text, "' is not one of latency, bandwidth"));
}

std::string ProbeResultText(const roced::v1::ProbeResult& r) {
  std::string out;
  const bool latency = r.kind() == roced::v1::PROBE_KIND_LATENCY;
  absl::StrAppend(&out, Rule());
  absl::StrAppend(&out, "                    RDMA_Write ", latency ? "Latency" : "BW",
                  " Test (roced probe)\n");
  absl::StrAppendFormat(&out, " Peer            : %s\n", r.peer());
  absl::StrAppendFormat(&out, " Device          : %s\n", r.device().empty() ? "-" : r.device());
  absl::StrAppendFormat(&out, " Connection type : RC    Using SRQ : OFF\n");
  absl::StrAppendFormat(&out, " Started         : %s (took %s)\n",
                        absl::FormatTime("%Y-%m-%d %H:%M:%S %Z", FromProto(r.started_at()),
                                         absl::LocalTimeZone()),
                        absl::FormatDuration(absl::Trunc(FromProto(r.elapsed()),
                                                         absl::Milliseconds(1))));
  absl::StrAppend(&out, Rule());
  if (!r.success()) {
    absl::StrAppend(&out, " FAILED: ", r.failure_reason(), "\n");
    if (!r.failure_detail().empty()) absl::StrAppend(&out, "   ", r.failure_detail(), "\n");
  } else if (latency) {
    const auto& l = r.latency();
    absl::StrAppendFormat(&out, " %-7s %-12s %-12s %-12s %-16s %-12s %-14s %-16s %-16s %-16s\n",
                          "#bytes", "#iterations", "t_min[usec]", "t_max[usec]",
                          "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]",
                          "90% pctl[usec]", "99% pctl[usec]", "99.9% pctl[usec]");
    absl::StrAppendFormat(&out,
                          " %-7d %-12d %-12.2f %-12.2f %-16.2f %-12.2f %-14.2f %-16.2f %-16.2f "
                          "%-16.2f\n",
                          r.size(), l.samples(), l.min_us(), l.max_us(), l.p50_us(), l.mean_us(),
                          l.stdev_us(), l.p90_us(), l.p99_us(), l.p999_us());
  } else {
    const auto& b = r.bandwidth();
    absl::StrAppendFormat(&out, " %-10s %-14s %-18s %-20s %-14s\n", "#bytes", "#iterations",
                          "BW peak[Gb/sec]", "BW average[Gb/sec]", "MsgRate[Mpps]");
    absl::StrAppendFormat(&out, " %-10d %-14d %-18.2f %-20.2f %-14.6f\n", r.size(), b.messages(),
                          b.peak_gbps(), b.gbps(), b.msg_rate_mpps());
  }
  absl::StrAppend(&out, Rule());
  auto deltas = [&](const char* who,
                    const google::protobuf::RepeatedPtrField<roced::v1::CounterDelta>& ds) {
    if (ds.empty()) return;
    absl::StrAppend(&out, " ", who, " counter deltas:");
    for (const auto& d : ds) absl::StrAppend(&out, " ", d.name(), "=+", d.delta());
    absl::StrAppend(&out, "\n");
  };
  deltas("local", r.local_counter_deltas());
  deltas("peer", r.peer_counter_deltas());
  if (!r.peer_counters_error().empty()) {
    absl::StrAppend(&out, " peer counter deltas unavailable: ", r.peer_counters_error(), "\n");
  }
  if (r.wc_errors() > 0 || r.timeouts() > 0) {
    absl::StrAppend(&out, " work-completion errors: ", r.wc_errors(), ", timeouts: ", r.timeouts(),
                    "\n");
  }
  return out;
}

std::string ProbeHistoryTable(const roced::v1::ListProbeResultsResponse& response) {
  if (response.results().empty()) return "No probe results yet.\n";
  std::string out = absl::StrFormat("%-19s  %-16s %-9s %-8s %9s  %-7s %10s %10s %9s  %s\n",
                                    "STARTED", "PEER", "KIND", "DEVICE", "SIZE", "RESULT",
                                    "P50[us]", "P99[us]", "Gb/s", "REASON");
  for (const auto& r : response.results()) {
    const bool latency = r.kind() == roced::v1::PROBE_KIND_LATENCY;
    const std::string p50 = r.success() && latency ? absl::StrFormat("%.2f", r.latency().p50_us()) : "-";
    const std::string p99 = r.success() && latency ? absl::StrFormat("%.2f", r.latency().p99_us()) : "-";
    const std::string gbps =
        r.success() && !latency ? absl::StrFormat("%.3f", r.bandwidth().gbps()) : "-";
    absl::StrAppendFormat(
        &out, "%-19s  %-16s %-9s %-8s %9d  %-7s %10s %10s %9s  %s\n",
        absl::FormatTime("%Y-%m-%d %H:%M:%S", FromProto(r.started_at()), absl::LocalTimeZone()),
        r.peer(), KindName(r.kind()), r.device().empty() ? "-" : r.device(), r.size(),
        r.success() ? "ok" : "FAILED", p50, p99, gbps, r.failure_reason());
  }
  return out;
}

}  // namespace roced::ctl
