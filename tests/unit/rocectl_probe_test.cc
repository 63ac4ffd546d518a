// `rocectl probe` / `rocectl probes` renderings: perftest's column names and
// figures, failures with their reason, the history table, --kind parsing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tools/rocectl/probe_cmd.h"

namespace roced::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

roced::v1::ProbeResult LatencyResult() {
  roced::v1::ProbeResult r;
  r.set_peer("node2");
  r.set_device("rxe0");
  r.set_kind(roced::v1::PROBE_KIND_LATENCY);
  r.set_success(true);
  r.set_size(2);
  r.set_iterations(1000);
  auto* l = r.mutable_latency();
  l->set_min_us(180.5);
  l->set_p50_us(190.25);
  l->set_p90_us(200);
  l->set_p99_us(250.75);
  l->set_p999_us(400);
  l->set_max_us(512);
  l->set_mean_us(195);
  l->set_stdev_us(12.5);
  l->set_samples(1000);
  r.mutable_started_at()->set_seconds(1700000000);
  r.mutable_elapsed()->set_seconds(1);
  return r;
}

TEST(ProbeResultText, LatencyUsesIbWriteLatColumnsAndFigures) {
  auto r = LatencyResult();
  auto* d = r.add_local_counter_deltas();
  d->set_name("rcvd_seq_err");
  d->set_delta(3);
  const std::string text = ProbeResultText(r);
  EXPECT_THAT(text, HasSubstr("RDMA_Write Latency Test"));
  for (const char* col : {"#bytes", "#iterations", "t_min[usec]", "t_max[usec]", "t_typical[usec]",
                          "t_avg[usec]", "t_stdev[usec]", "99% pctl[usec]", "99.9% pctl[usec]"}) {
    EXPECT_THAT(text, HasSubstr(col));
  }
  // Figures in column order: bytes, iterations, min, max, typical, avg.
  EXPECT_THAT(text, testing::ContainsRegex(
                        "2 +1000 +180\\.50 +512\\.00 +190\\.25 +195\\.00 +12\\.50 +200\\.00 "
                        "+250\\.75 +400\\.00"));
  EXPECT_THAT(text, HasSubstr("local counter deltas: rcvd_seq_err=+3"));
  EXPECT_THAT(text, HasSubstr("node2"));
}

TEST(ProbeResultText, BandwidthUsesIbWriteBwColumnsInGbps) {
  roced::v1::ProbeResult r;
  r.set_kind(roced::v1::PROBE_KIND_BANDWIDTH);
  r.set_success(true);
  r.set_size(65536);
  r.mutable_bandwidth()->set_gbps(91.25);
  r.mutable_bandwidth()->set_peak_gbps(92.5);
  r.mutable_bandwidth()->set_msg_rate_mpps(0.174);
  r.mutable_bandwidth()->set_messages(348000);
  const std::string text = ProbeResultText(r);
  EXPECT_THAT(text, HasSubstr("BW peak[Gb/sec]"));
  EXPECT_THAT(text, HasSubstr("BW average[Gb/sec]"));
  EXPECT_THAT(text, HasSubstr("MsgRate[Mpps]"));
  EXPECT_THAT(text, testing::ContainsRegex("65536 +348000 +92\\.50 +91\\.25 +0\\.174000"));
}

TEST(ProbeResultText, FailureShowsReasonAndDetailInsteadOfFigures) {
  roced::v1::ProbeResult r = LatencyResult();
  r.set_success(false);
  r.clear_latency();
  r.set_failure_reason("peer_unavailable");
  r.set_failure_detail("OpenEndpoint at 10.0.0.2:7471: failed to connect");
  r.set_timeouts(0);
  const std::string text = ProbeResultText(r);
  EXPECT_THAT(text, HasSubstr("FAILED: peer_unavailable"));
  EXPECT_THAT(text, HasSubstr("OpenEndpoint at 10.0.0.2:7471"));
  EXPECT_THAT(text, Not(HasSubstr("t_typical")));
}

TEST(ProbeHistoryTable, OneLinePerResultWithP50P99OrGbps) {
  roced::v1::ListProbeResultsResponse resp;
  *resp.add_results() = LatencyResult();
  auto* bw = resp.add_results();
  bw->set_peer("node3");
  bw->set_kind(roced::v1::PROBE_KIND_BANDWIDTH);
  bw->set_success(true);
  bw->set_size(65536);
  bw->mutable_bandwidth()->set_gbps(0.045);
  auto* failed = resp.add_results();
  failed->set_peer("node4");
  failed->set_kind(roced::v1::PROBE_KIND_LATENCY);
  failed->set_failure_reason("connect_timeout");
  const std::string text = ProbeHistoryTable(resp);
  EXPECT_THAT(text, HasSubstr("P50[us]"));
  EXPECT_THAT(text, testing::ContainsRegex("node2 +latency +rxe0 +2 +ok +190\\.25 +250\\.75"));
  EXPECT_THAT(text, testing::ContainsRegex("node3 +bandwidth .* ok +- +- +0\\.045"));
  EXPECT_THAT(text, testing::ContainsRegex("node4 .*FAILED.*connect_timeout"));
  EXPECT_EQ(ProbeHistoryTable({}), "No probe results yet.\n");
}

TEST(ParseProbeKind, AcceptsNamesAndShortFormsAndRejectsOthers) {
  EXPECT_EQ(*ParseProbeKind("", roced::v1::PROBE_KIND_LATENCY), roced::v1::PROBE_KIND_LATENCY);
  EXPECT_EQ(*ParseProbeKind("", roced::v1::PROBE_KIND_UNSPECIFIED),
            roced::v1::PROBE_KIND_UNSPECIFIED);
  EXPECT_EQ(*ParseProbeKind("Bandwidth", roced::v1::PROBE_KIND_LATENCY),
            roced::v1::PROBE_KIND_BANDWIDTH);
  EXPECT_EQ(*ParseProbeKind("bw", roced::v1::PROBE_KIND_LATENCY), roced::v1::PROBE_KIND_BANDWIDTH);
  EXPECT_EQ(*ParseProbeKind("lat", roced::v1::PROBE_KIND_BANDWIDTH), roced::v1::PROBE_KIND_LATENCY);
  EXPECT_FALSE(ParseProbeKind("throughput", roced::v1::PROBE_KIND_LATENCY).ok());
}

}  // namespace
}  // namespace roced::ctl
