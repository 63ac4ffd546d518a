// The device-independent parts of the probe engine: latency and bandwidth
// figures, GID selection, failure reasons, the schedule and the limits,
// the result history and counter deltas.
#include <infiniband/verbs.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "probe/counter_delta.h"
#include "probe/gid.h"
#include "probe/history.h"
#include "probe/reason.h"
#include "probe/schedule.h"
#include "probe/stats.h"
#include "probe/ud_port.h"
#include "probe/verbs_endpoint.h"

namespace roced::probe {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// --- latency and bandwidth figures -----------------------------------------

// The mesh's UD port, pure parts: the UDP source port rxe gives a QP (the
// lab's mesh_loss test checks the formula against packets on the wire),
// the one a GRH flow label maps to (rdma_flow_label_to_udp_sport), the
// flow labels used, and NIC cycles as nanoseconds.
TEST(UdPort, SourcePortsAndClockConversion) {
  EXPECT_EQ(RxeSourcePort(17), 0xDF94);
  EXPECT_EQ(RxeSourcePort(0x123456), RxeSourcePort(0x123456));
  for (uint32_t qpn : {1u, 17u, 0xffffffu}) {
    EXPECT_GE(RxeSourcePort(qpn), 0xC000);
  }
  EXPECT_EQ(FlowLabelSourcePort(0x12345), 0xE341);  // low 14 bits xor the high 6
  EXPECT_EQ(FlowLabelSourcePort(0), 0xC000);
  std::set<uint32_t> labels;
  for (uint32_t i = 0; i < 256; ++i) {
    const uint32_t label = MeshFlowLabel(i);
    EXPECT_NE(label, 0u);
    EXPECT_LE(label, 0xfffffu);
    labels.insert(label);
  }
  EXPECT_EQ(labels.size(), 256u);  // every index its own label
  EXPECT_EQ(CyclesToNs(1'000'000, 1'000'000), 1'000'000);     // 1 GHz: a cycle a ns
  EXPECT_EQ(CyclesToNs(156'250, 156'250), 1'000'000);         // 156.25 MHz: 1 ms
  EXPECT_EQ(CyclesToNs(UINT64_MAX, 1'000'000), static_cast<int64_t>(UINT64_MAX / 1'000'000 * 1'000'000 +
                                                                    UINT64_MAX % 1'000'000));
  EXPECT_EQ(CyclesToNs(5, 0), 0);
}

TEST(LatencyStats, ReportsHalfTheRoundTripInMicroseconds) {
  // Round trips of 10, 20, 30 us are one-way latencies of 5, 10, 15 us.
  auto s = LatencyStatsFromRoundTrips({10000, 30000, 20000});
  EXPECT_DOUBLE_EQ(s.min_us(), 5);
  EXPECT_DOUBLE_EQ(s.max_us(), 15);
  EXPECT_DOUBLE_EQ(s.mean_us(), 10);
  EXPECT_EQ(s.samples(), 3u);
}

TEST(LatencyStats, MedianAndPercentilesPickElementsLikeIbWriteLat) {
  // 1000 samples 1..1000 us one-way: ib_write_lat's t_typical is element
  // n/2 of the sorted samples, its 99% element floor(0.99 n).
  std::vector<int64_t> rtt;
  for (int i = 1000; i >= 1; --i) rtt.push_back(int64_t{i} * 2000);
  auto s = LatencyStatsFromRoundTrips(rtt);
  EXPECT_DOUBLE_EQ(s.p50_us(), 501);
  EXPECT_DOUBLE_EQ(s.p90_us(), 901);
  EXPECT_DOUBLE_EQ(s.p99_us(), 991);
  EXPECT_DOUBLE_EQ(s.p999_us(), 1000);
  EXPECT_DOUBLE_EQ(s.min_us(), 1);
  EXPECT_DOUBLE_EQ(s.max_us(), 1000);
}

TEST(LatencyStats, StdevIsThePopulationStandardDeviation) {
  // One-way 2, 4, 4, 4, 5, 5, 7, 9 us: mean 5, population stdev 2.
  auto s = LatencyStatsFromRoundTrips({4000, 8000, 8000, 8000, 10000, 10000, 14000, 18000});
  EXPECT_DOUBLE_EQ(s.mean_us(), 5);
  EXPECT_DOUBLE_EQ(s.stdev_us(), 2);
}

TEST(LatencyStats, NoSamplesGiveZeros) {
  auto s = LatencyStatsFromRoundTrips({});
  EXPECT_EQ(s.samples(), 0u);
  EXPECT_EQ(s.p99_us(), 0);
}

TEST(LatencyStats, QuantileClampsToTheLastElement) {
  EXPECT_EQ(QuantileOfSorted({1, 2, 3}, 1.0), 3);
  EXPECT_EQ(QuantileOfSorted({7}, 0.999), 7);
  EXPECT_EQ(QuantileOfSorted({}, 0.5), 0);
}

TEST(BandwidthStats, GigabitsAreTenToTheNinthAndMessageRateInMillions) {
  // 1.25 GB in 1 s = 10 Gb/s; 20000 messages in 0.5 s = 0.04 Mpps.
  auto s = BandwidthStatsFrom(1250000000, 20000, absl::Seconds(1), 0);
  EXPECT_DOUBLE_EQ(s.gbps(), 10);
  EXPECT_DOUBLE_EQ(s.peak_gbps(), 10);  // no window: the average
  EXPECT_DOUBLE_EQ(s.msg_rate_mpps(), 0.02);
  EXPECT_EQ(s.bytes(), 1250000000u);
  EXPECT_EQ(s.messages(), 20000u);
}

TEST(BandwidthStats, PeakIsTheBestWindowAndNeverBelowTheAverage) {
  EXPECT_DOUBLE_EQ(BandwidthStatsFrom(1250000000, 1, absl::Seconds(1), 12e9).peak_gbps(), 12);
  EXPECT_DOUBLE_EQ(BandwidthStatsFrom(1250000000, 1, absl::Seconds(1), 3e9).peak_gbps(), 10);
}

TEST(BandwidthStats, ZeroElapsedGivesNoRates) {
  auto s = BandwidthStatsFrom(100, 1, absl::ZeroDuration(), 0);
  EXPECT_EQ(s.gbps(), 0);
  EXPECT_EQ(s.bytes(), 100u);
}

TEST(LatencyBuckets, CountsOneWaySecondsIntoLessOrEqualBuckets) {
  // One-way 1 us, 2 us (on a bound: that bucket), 3 us, 10 ms (beyond: +Inf).
  double sum = 0;
  auto inc = LatencyBucketIncrements({2000, 4000, 6000, 20000000}, {1e-6, 2e-6, 5e-6}, &sum);
  EXPECT_THAT(inc, ElementsAre(1, 1, 1, 1));
  EXPECT_NEAR(sum, 1e-6 + 2e-6 + 3e-6 + 1e-2, 1e-12);
}

// --- path MTU ---------------------------------------------------------------

TEST(PathMtu, IsTheSmallerOfBothActiveMtus) {
  EXPECT_EQ(PathMtuBytes(4096, 1024), 1024u);
  EXPECT_EQ(PathMtuBytes(1024, 4096), 1024u);
  EXPECT_EQ(PathMtuBytes(2048, 0), 2048u);  // peer did not say
  EXPECT_EQ(BytesToIbMtu(1024), IBV_MTU_1024);
  EXPECT_EQ(BytesToIbMtu(4096), IBV_MTU_4096);
  EXPECT_EQ(BytesToIbMtu(1500), IBV_MTU_1024);  // rounds down
}

// --- GID selection ----------------------------------------------------------

GidEntry Entry(uint32_t index, uint32_t type, uint32_t ifindex, std::array<uint8_t, 16> gid,
               uint32_t port = 1) {
  GidEntry e;
  e.index = index;
  e.type = type;
  e.netdev_ifindex = ifindex;
  e.gid = gid;
  e.port = port;
  return e;
}
constexpr std::array<uint8_t, 16> kLinkLocal = {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                                0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56};
std::array<uint8_t, 16> V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

TEST(GidSelection, PicksTheRoceV2Ipv4EntryNotTheDefaultIndex) {
  // The kernel's usual layout: link-local v1, v2, then the IPv4 v1, v2.
  std::vector<GidEntry> table = {
      Entry(0, IBV_GID_TYPE_ROCE_V1, 2, kLinkLocal), Entry(1, IBV_GID_TYPE_ROCE_V2, 2, kLinkLocal),
      Entry(2, IBV_GID_TYPE_ROCE_V1, 2, V4(192, 168, 77, 11)),
      Entry(3, IBV_GID_TYPE_ROCE_V2, 2, V4(192, 168, 77, 11))};
  auto gid = SelectRoceV2Ipv4Gid(table, 1, 2, "");
  ASSERT_TRUE(gid.ok()) << gid.status();
  EXPECT_EQ(gid->index, 3u);
  EXPECT_EQ(Ipv4OfGid(gid->gid), "192.168.77.11");
}

TEST(GidSelection, FollowsTheEntryWhenItsIndexMoves) {
  // After rxe-remove/add or an address change the IPv4 entry sits elsewhere.
  std::vector<GidEntry> table = {Entry(0, IBV_GID_TYPE_ROCE_V2, 2, V4(192, 168, 77, 11)),
                                 Entry(1, IBV_GID_TYPE_ROCE_V2, 2, kLinkLocal)};
  EXPECT_EQ(SelectRoceV2Ipv4Gid(table, 1, 2, "")->index, 0u);
}

TEST(GidSelection, FiltersByNetdevAddressAndPort) {
  std::vector<GidEntry> table = {
      Entry(1, IBV_GID_TYPE_ROCE_V2, 7, V4(10, 0, 0, 1)),      // other netdev (VLAN)
      Entry(2, IBV_GID_TYPE_ROCE_V2, 2, V4(10, 0, 0, 2)),      // first address
      Entry(3, IBV_GID_TYPE_ROCE_V2, 2, V4(10, 0, 0, 3)),      // second address
      Entry(4, IBV_GID_TYPE_ROCE_V2, 2, V4(10, 0, 0, 4), 2)};  // port 2
  EXPECT_EQ(SelectRoceV2Ipv4Gid(table, 1, 2, "")->index, 2u);
  EXPECT_EQ(SelectRoceV2Ipv4Gid(table, 1, 2, "10.0.0.3")->index, 3u);
  EXPECT_EQ(SelectRoceV2Ipv4Gid(table, 1, 7, "")->index, 1u);
  EXPECT_EQ(SelectRoceV2Ipv4Gid(table, 2, 0, "")->index, 4u);
}

TEST(GidSelection, OnlyRoceV1OrIpv6GivesNoGidWithAReason) {
  std::vector<GidEntry> table = {Entry(0, IBV_GID_TYPE_ROCE_V1, 2, V4(10, 0, 0, 2)),
                                 Entry(1, IBV_GID_TYPE_ROCE_V2, 2, kLinkLocal)};
  auto gid = SelectRoceV2Ipv4Gid(table, 1, 2, "");
  ASSERT_FALSE(gid.ok());
  EXPECT_EQ(gid.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReasonOf(gid.status()), "no_gid");
  EXPECT_THAT(gid.status().message(), HasSubstr("RoCE v2"));
}

// --- reasons ----------------------------------------------------------------

TEST(Reasons, TravelWithTheStatus) {
  absl::Status s = ProbeError(absl::StatusCode::kDeadlineExceeded, kReasonConnectTimeout, "x");
  EXPECT_EQ(ReasonOf(s), "connect_timeout");
  EXPECT_EQ(s.message(), "x");
  EXPECT_EQ(ReasonOf(absl::OkStatus()), "");
  EXPECT_EQ(ReasonOf(absl::InternalError("no reason attached")), "internal");
}

TEST(Reasons, WorkCompletionErrorsNameTheVerbsStatus) {
  EXPECT_EQ(WcErrorReason(IBV_WC_RETRY_EXC_ERR), "wc_error:transport retry counter exceeded");
  EXPECT_EQ(WcErrorReason(IBV_WC_REM_ACCESS_ERR), "wc_error:remote access error");
}

TEST(Reasons, PeerCallFailuresMapByCode) {
  EXPECT_EQ(PeerRpcReason(absl::StatusCode::kUnavailable), "peer_unavailable");
  EXPECT_EQ(PeerRpcReason(absl::StatusCode::kDeadlineExceeded), "peer_unavailable");
  EXPECT_EQ(PeerRpcReason(absl::StatusCode::kResourceExhausted), "peer_busy");
  EXPECT_EQ(PeerRpcReason(absl::StatusCode::kFailedPrecondition), "peer_device_unavailable");
  EXPECT_EQ(PeerRpcReason(absl::StatusCode::kUnimplemented), "peer_unsupported");
  EXPECT_EQ(PeerRpcReason(absl::StatusCode::kInvalidArgument), "peer_error");
}

// --- schedule and limits ----------------------------------------------------

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);
const ScheduleKey kLat{"node2", roced::v1::PROBE_KIND_LATENCY};
const ScheduleKey kBw{"node2", roced::v1::PROBE_KIND_BANDWIDTH};

TEST(Schedule, FirstRunsSpreadWithinTheFirstInterval) {
  ProbeSchedule s(0.1, /*seed=*/1);
  s.Configure({"node2", "node3"}, absl::Seconds(10), absl::Minutes(5), kT0);
  for (const auto& key : {kLat, ScheduleKey{"node3", roced::v1::PROBE_KIND_LATENCY}}) {
    EXPECT_GE(s.DueTime(key), kT0);
    EXPECT_LE(s.DueTime(key), kT0 + absl::Seconds(10));
  }
  EXPECT_LE(s.DueTime(kBw), kT0 + absl::Minutes(5));
  EXPECT_TRUE(s.Due(kT0 - absl::Seconds(1)).empty());
  EXPECT_EQ(s.Due(kT0 + absl::Minutes(5)).size(), 4u);
}

TEST(Schedule, NextRunIsTheIntervalWithBoundedJitterThatVaries) {
  ProbeSchedule s(0.1, /*seed=*/7);
  s.Configure({"node2"}, absl::Seconds(10), absl::ZeroDuration(), kT0);
  std::set<int64_t> seen;
  absl::Time now = kT0;
  for (int i = 0; i < 200; ++i) {
    s.Started(kLat, now);
    const absl::Duration gap = s.DueTime(kLat) - now;
    EXPECT_GE(gap, absl::Seconds(9));
    EXPECT_LE(gap, absl::Seconds(11));
    seen.insert(absl::ToInt64Milliseconds(gap));
    now = s.DueTime(kLat);
  }
  EXPECT_GT(seen.size(), 50u) << "jitter must vary the interval";
}

TEST(Schedule, ZeroIntervalDisablesAKindAndRemovedPeersGo) {
  ProbeSchedule s(0.1, 1);
  s.Configure({"node2"}, absl::Seconds(10), absl::ZeroDuration(), kT0);
  EXPECT_EQ(s.DueTime(kBw), absl::InfiniteFuture());
  s.Configure({}, absl::Seconds(10), absl::Minutes(5), kT0);
  EXPECT_EQ(s.NextDue(), absl::InfiniteFuture());
}

TEST(Schedule, ReconfiguringKeepsDueTimesAndPullsInAShorterInterval) {
  ProbeSchedule s(0.0, 1);
  s.Configure({"node2"}, absl::Minutes(10), absl::ZeroDuration(), kT0);
  s.Started(kLat, kT0);
  EXPECT_EQ(s.DueTime(kLat), kT0 + absl::Minutes(10));
  s.Configure({"node2"}, absl::Minutes(10), absl::ZeroDuration(), kT0 + absl::Seconds(1));
  EXPECT_EQ(s.DueTime(kLat), kT0 + absl::Minutes(10));
  s.Configure({"node2"}, absl::Seconds(30), absl::ZeroDuration(), kT0 + absl::Seconds(1));
  EXPECT_EQ(s.DueTime(kLat), kT0 + absl::Seconds(31));
}

TEST(Schedule, DeferredProbeIsDueAgainAfterTheDelay) {
  ProbeSchedule s(0.1, 1);
  s.Configure({"node2"}, absl::Seconds(10), absl::ZeroDuration(), kT0);
  const absl::Time due = s.DueTime(kLat);
  s.Defer(kLat, due, absl::Seconds(5));
  EXPECT_TRUE(s.Due(due + absl::Seconds(4)).empty());
  EXPECT_THAT(s.Due(due + absl::Seconds(5)), ElementsAre(kLat));
}

TEST(Limiter, RefusesBeyondMaxConcurrentUntilASlotIsReleased) {
  ProbeLimiter limiter;
  auto a = limiter.TryAcquire(roced::v1::PROBE_KIND_LATENCY, 2);
  auto b = limiter.TryAcquire(roced::v1::PROBE_KIND_LATENCY, 2);
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = limiter.TryAcquire(roced::v1::PROBE_KIND_LATENCY, 2);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(c.status().message(), HasSubstr("max_concurrent is 2"));
  a->Release();
  EXPECT_TRUE(limiter.TryAcquire(roced::v1::PROBE_KIND_LATENCY, 2).ok());
  EXPECT_EQ(limiter.running(), 1);  // the temporary above released itself
}

TEST(Limiter, RunsBandwidthProbesOneAtATime) {
  ProbeLimiter limiter;
  auto bw = limiter.TryAcquire(roced::v1::PROBE_KIND_BANDWIDTH, 4);
  ASSERT_TRUE(bw.ok());
  auto second = limiter.TryAcquire(roced::v1::PROBE_KIND_BANDWIDTH, 4);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr("bandwidth probe is already running"));
  EXPECT_TRUE(limiter.TryAcquire(roced::v1::PROBE_KIND_LATENCY, 4).ok());
  { ProbeLimiter::Slot moved = std::move(*bw); }
  EXPECT_TRUE(limiter.TryAcquire(roced::v1::PROBE_KIND_BANDWIDTH, 4).ok());
  EXPECT_EQ(limiter.running(), 0);
}

// --- history ----------------------------------------------------------------

roced::v1::ProbeResult Result(const std::string& peer, roced::v1::ProbeKind kind, int64_t t,
                              bool ok = true) {
  roced::v1::ProbeResult r;
  r.set_peer(peer);
  r.set_kind(kind);
  r.mutable_started_at()->set_seconds(t);
  r.set_success(ok);
  if (!ok) r.set_failure_reason("peer_unavailable");
  r.set_id(absl::StrCat(peer, "-", t));
  return r;
}

TEST(History, KeepsTheNewestPerPeerAndKind) {
  ProbeHistory h(3);
  for (int t = 1; t <= 5; ++t) h.Add(Result("a", roced::v1::PROBE_KIND_LATENCY, t));
  h.Add(Result("a", roced::v1::PROBE_KIND_BANDWIDTH, 2));
  auto lat = h.List("a", roced::v1::PROBE_KIND_LATENCY, 0);
  ASSERT_EQ(lat.size(), 3u);
  EXPECT_EQ(lat[0].id(), "a-5");
  EXPECT_EQ(lat[2].id(), "a-3");
  // One peer's busy latency schedule does not push out its bandwidth results.
  EXPECT_EQ(h.List("a", roced::v1::PROBE_KIND_BANDWIDTH, 0).size(), 1u);
}

TEST(History, PastItsKeyBoundTheStalestPeerGoes) {
  ProbeHistory h(10, /*max_keys=*/3);
  h.Add(Result("a", roced::v1::PROBE_KIND_LATENCY, 5));
  h.Add(Result("b", roced::v1::PROBE_KIND_LATENCY, 1));  // the stalest
  h.Add(Result("c", roced::v1::PROBE_KIND_LATENCY, 3));
  h.Add(Result("c", roced::v1::PROBE_KIND_LATENCY, 4));  // a known key: nothing goes
  EXPECT_EQ(h.Summaries().size(), 3u);
  h.Add(Result("d", roced::v1::PROBE_KIND_LATENCY, 6));
  std::vector<std::string> peers;
  for (const auto& s : h.Summaries()) peers.push_back(s.peer());
  EXPECT_THAT(peers, ::testing::ElementsAre("a", "c", "d"));
}

TEST(History, ListsNewestFirstAcrossPeersWithFiltersAndLimit) {
  ProbeHistory h(10);
  h.Add(Result("a", roced::v1::PROBE_KIND_LATENCY, 1));
  h.Add(Result("b", roced::v1::PROBE_KIND_LATENCY, 3));
  h.Add(Result("a", roced::v1::PROBE_KIND_BANDWIDTH, 2));
  auto all = h.List("", roced::v1::PROBE_KIND_UNSPECIFIED, 0);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id(), "b-3");
  EXPECT_EQ(all[1].id(), "a-2");
  EXPECT_EQ(h.List("", roced::v1::PROBE_KIND_UNSPECIFIED, 1).size(), 1u);
  EXPECT_EQ(h.List("a", roced::v1::PROBE_KIND_UNSPECIFIED, 0).size(), 2u);
  EXPECT_EQ(h.List("", roced::v1::PROBE_KIND_BANDWIDTH, 0).size(), 1u);
}

TEST(History, SummaryIsTheLatestResultOfEachPeerAndKind) {
  ProbeHistory h(10);
  auto ok = Result("a", roced::v1::PROBE_KIND_LATENCY, 1);
  ok.mutable_latency()->set_p50_us(3);
  ok.mutable_latency()->set_p99_us(9);
  h.Add(ok);
  h.Add(Result("a", roced::v1::PROBE_KIND_LATENCY, 2, /*ok=*/false));
  auto s = h.Summaries();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FALSE(s[0].last_success());
  EXPECT_EQ(s[0].last_failure_reason(), "peer_unavailable");
  EXPECT_EQ(s[0].last_run().seconds(), 2);
  EXPECT_EQ(SummaryOf(ok).p99_us(), 9);
}

// --- counter deltas ---------------------------------------------------------

TEST(CounterDeltas, ReadsHwCountersAndReportsWhatGrew) {
  const std::string root =
      (std::filesystem::temp_directory_path() / ("probe-counters-" + std::to_string(getpid())))
          .string();
  const std::string hw = root + "/class/infiniband/rxe0/ports/1/hw_counters";
  std::filesystem::create_directories(hw);
  auto put = [&](const std::string& name, const std::string& v) { std::ofstream(hw + "/" + name) << v << "\n"; };
  put("rcvd_seq_err", "3");
  put("retry_exceeded_err", "0");
  put("lifespan", "10");
  CounterSnapshot before = ReadPortCounters(root, "rxe0", 1);
  EXPECT_EQ(before.count("lifespan"), 0u);
  EXPECT_EQ(before.at("rcvd_seq_err"), 3u);
  put("rcvd_seq_err", "7");
  CounterSnapshot after = ReadPortCounters(root, "rxe0", 1);
  auto d = CounterDeltas(before, after);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name(), "rcvd_seq_err");
  EXPECT_EQ(d[0].delta(), 4u);
  EXPECT_TRUE(ReadPortCounters(root, "nodev", 1).empty());
  std::filesystem::remove_all(root);
}

TEST(CounterDeltas, PmaCountersArePrefixedAndHwCountersKeepTheirName) {
  const std::string fixture = std::string(ROCED_FIXTURES) + "/sysfs";
  CounterSnapshot s = ReadPortCounters(fixture, "mlx5_0", 1);
  EXPECT_EQ(s.size(), 21u + 25u);
  EXPECT_EQ(s.at("np_cnp_sent"), 101201u);
  EXPECT_EQ(s.count("counters/port_xmit_data"), 1u);
  EXPECT_EQ(s.count("port_xmit_data"), 0u);
}

TEST(PeerCounterSnapshot, TakesTheDevicesRdmaSetsByTheirSourceNames) {
  roced::v1::GetCountersResponse resp;
  auto* hw = resp.add_sets();
  hw->set_device("mlx5_0");
  hw->set_source("hw_counters");
  auto* c = hw->add_counters();
  c->set_name("cnp_sent");
  c->set_source_name("np_cnp_sent");
  c->set_value(5);
  c = hw->add_counters();
  c->set_name("out_of_sequence");
  c->set_value(2);
  auto* pma = resp.add_sets();
  pma->set_device("mlx5_0");
  pma->set_source("counters");
  c = pma->add_counters();
  c->set_name("port_xmit_data");
  c->set_value(9);
  auto* other = resp.add_sets();  // another device, and a non-RDMA source
  other->set_device("mlx5_1");
  other->set_source("hw_counters");
  other->add_counters()->set_name("x");
  auto* ethtool = resp.add_sets();
  ethtool->set_device("mlx5_0");
  ethtool->set_source("ethtool");
  ethtool->add_counters()->set_name("rx_pause");
  absl::StatusOr<CounterSnapshot> s = PeerCounterSnapshot(resp, "mlx5_0");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, (CounterSnapshot{{"np_cnp_sent", 5}, {"out_of_sequence", 2},
                                 {"counters/port_xmit_data", 9}}));
  absl::StatusOr<CounterSnapshot> none = PeerCounterSnapshot(resp, "mlx5_9");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(), "GetCounters: no RDMA counters for mlx5_9");
}

}  // namespace
}  // namespace roced::probe
