// The mesh prober without I/O: requests go only to peers with a known
// endpoint, at the sizes of the rotation (the path-MTU class the smaller
// MTU); the responder's reply matches its request and gives the network
// round trip and the responder's hold; replies that match nothing (another
// prober's, a duplicate, a changed size) are dropped and counted;
// unanswered requests are lost after the timeout, in the window they were
// sent in; a peer that leaves the pinglist takes its pending state and
// results with it.
#include "mesh/prober.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "mesh/probe_packet.h"

namespace roced::mesh {
namespace {

constexpr int64_t kMs = 1000 * 1000;
constexpr int64_t kS = 1000 * kMs;

Pinglist List(std::initializer_list<const char*> peers) {
  Pinglist out;
  for (const char* name : peers) out.entries.push_back({name, "tor-a", PeerScope::kSameTor});
  return out;
}

MeshProber Make(const std::string& self, MeshProberOptions options = {}) {
  absl::StatusOr<MeshProber> p = MeshProber::Create(self, std::move(options));
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

MeshTarget Target(uint32_t mtu) {
  MeshTarget t;
  t.gid[15] = 7;
  t.qpn = 17;
  t.active_mtu = mtu;
  return t;
}

// Every request due over [from, to), asking each millisecond.
std::vector<MeshRequest> DueBetween(MeshProber& p, int64_t from, int64_t to, uint32_t local_mtu = 4096) {
  std::vector<MeshRequest> out;
  for (int64_t t = from; t < to; t += kMs) {
    for (MeshRequest& r : p.Due(t, 100, local_mtu)) out.push_back(std::move(r));
  }
  return out;
}

TEST(MeshProber, SendsOnlyToPeersWithAnEndpointAtTheRotatedSizes) {
  MeshProber p = Make("a");
  p.SetPinglist(List({"b", "c"}), 0);
  p.SetTarget("b", Target(1024));
  std::vector<MeshRequest> requests = DueBetween(p, 0, 2 * kS);
  ASSERT_EQ(requests.size(), 20u);  // 10 a second to the one peer with an endpoint
  std::set<size_t> sizes;
  for (const MeshRequest& r : requests) {
    EXPECT_EQ(r.peer, "b");
    EXPECT_EQ(r.target.qpn, 17u);
    EXPECT_EQ(r.dscp, 26);
    sizes.insert(r.bytes.size());
  }
  // 64 B, 1 KiB, and the path MTU: min(local 4096, peer 1024).
  EXPECT_EQ(sizes, (std::set<size_t>{64, 1024}));
  EXPECT_EQ(p.pending(), 20u);
}

TEST(MeshProber, ReplyFromTheResponderGivesTheNetworkRoundTrip) {
  MeshProber p = Make("a");
  p.SetPinglist(List({"b"}), 0);
  p.SetTarget("b", Target(4096));
  std::vector<MeshRequest> requests = DueBetween(p, 0, kS);
  ASSERT_FALSE(requests.empty());
  const MeshRequest& r = requests.front();
  // Sent at 1 ms (host clock); the responder holds it from 100 to 130 us
  // of its own clock; the reply is back at 1 ms + 250 us.
  p.Sent(r.id, 1 * kMs, false);
  absl::StatusOr<MeshAnswer> reply = MeshProber::Answer(r.bytes, 100'000, 130'000, false);
  ASSERT_TRUE(reply.ok()) << reply.status();
  std::optional<MeshOutcome> outcome = p.OnReply(reply->bytes, 1 * kMs + 250'000, false);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_TRUE(outcome->answered);
  EXPECT_EQ(outcome->peer, "b");
  EXPECT_EQ(outcome->rtt_ns, 220'000);  // 250 us less the responder's 30 us
  EXPECT_EQ(reply->dscp, r.dscp);  // the reply keeps the request's class
  EXPECT_EQ(reply->flow_label, r.flow_label);
  // The responder's hold goes to the results for the series' hold p99.
  std::vector<SeriesWindow> snap = p.Snapshot(2 * kS);
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_NEAR(static_cast<double>(snap[0].hold_p99_ns), 30'000.0, 0.05 * 30'000);
  // The same reply again matches nothing.
  EXPECT_FALSE(p.OnReply(reply->bytes, 1 * kMs + 260'000, false).has_value());
  EXPECT_EQ(p.unmatched(), 1u);
}

TEST(MeshProber, RepliesForAnotherProberOrNotRepliesAreDropped) {
  MeshProber a = Make("a");
  MeshProber x = Make("x");
  for (MeshProber* p : {&a, &x}) {
    p->SetPinglist(List({"b"}), 0);
    p->SetTarget("b", Target(4096));
  }
  std::vector<MeshRequest> from_x = DueBetween(x, 0, kS);
  ASSERT_FALSE(from_x.empty());
  DueBetween(a, 0, kS);  // a has requests pending with the same ids
  absl::StatusOr<MeshAnswer> reply = MeshProber::Answer(from_x.front().bytes, 1, 2, false);
  ASSERT_TRUE(reply.ok());
  EXPECT_FALSE(a.OnReply(reply->bytes, kS, false).has_value());
  // A request is not a reply; a reply is not answered.
  EXPECT_FALSE(a.OnReply(from_x.front().bytes, kS, false).has_value());
  EXPECT_FALSE(MeshProber::Answer(reply->bytes, 1, 2, false).ok());
  EXPECT_EQ(a.unmatched(), 2u);
  EXPECT_GT(x.prober_key(), 0u);
  EXPECT_NE(a.prober_key(), x.prober_key());
}

TEST(MeshProber, UnansweredRequestsAreLostAfterTheTimeoutInTheirWindow) {
  MeshProberOptions options;
  options.timeout = absl::Milliseconds(500);
  options.source_port = [](uint32_t i) { return 0xC000 + i; };
  MeshProber p = Make("a", options);
  p.SetPinglist(List({"b"}), 0);
  p.SetTarget("b", Target(4096));
  std::vector<MeshRequest> requests = DueBetween(p, 0, kS);
  ASSERT_EQ(requests.size(), 10u);
  // Answer all but the first.
  for (size_t i = 1; i < requests.size(); ++i) {
    absl::StatusOr<MeshAnswer> reply = MeshProber::Answer(requests[i].bytes, 5, 6, false);
    ASSERT_TRUE(reply.ok());
    ASSERT_TRUE(p.OnReply(reply->bytes, kS, false).has_value());
  }
  EXPECT_EQ(p.pending(), 1u);
  // The first went at its phase in [0, 100 ms): at 100 ms its 500 ms are
  // not over, at 600 ms they are.
  EXPECT_TRUE(p.ExpireLost(100 * kMs).empty());
  std::vector<MeshOutcome> lost = p.ExpireLost(600 * kMs);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_FALSE(lost[0].answered);
  EXPECT_EQ(p.pending(), 0u);
  std::vector<SeriesWindow> snapshot = p.Snapshot(2 * kS);
  uint64_t sent = 0, lost_count = 0;
  std::vector<uint32_t> ports;
  for (const SeriesWindow& w : snapshot) {
    sent += w.sent;
    lost_count += w.lost;
    ports.insert(ports.end(), w.lost_flow_labels.begin(), w.lost_flow_labels.end());
  }
  EXPECT_EQ(sent, 10u);
  EXPECT_EQ(lost_count, 1u);
  // The lost probe's source port, through the runtime's mapping.
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports[0], 0xC000 + requests.front().flow_label);
}

TEST(MeshProber, NicSendStampReplacesTheHostsAndMixedClocksGiveNoRoundTrip) {
  MeshProber p = Make("a");
  p.SetPinglist(List({"b"}), 0);
  p.SetTarget("b", Target(4096));
  std::vector<MeshRequest> requests = DueBetween(p, 0, kS);
  ASSERT_GE(requests.size(), 2u);
  // NIC stamps on both ends: 1,000,000 -> 1,300,000 with 100 held.
  p.Sent(requests[0].id, 1'000'000, true);
  auto reply = MeshProber::Answer(requests[0].bytes, 0, 100'000, false);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(p.OnReply(reply->bytes, 1'300'000, true)->rtt_ns, 200'000);
  // NIC-stamped send, host-stamped receive: answered, no round trip.
  p.Sent(requests[1].id, 1'000'000, true);
  reply = MeshProber::Answer(requests[1].bytes, 0, 100'000, false);
  ASSERT_TRUE(reply.ok());
  std::optional<MeshOutcome> mixed = p.OnReply(reply->bytes, 9'000'000'000, false);
  ASSERT_TRUE(mixed.has_value());
  EXPECT_TRUE(mixed->answered);
  EXPECT_EQ(mixed->rtt_ns, 0);
}

TEST(MeshProber, PeerLeavingThePinglistTakesItsResultsAndEndpoint) {
  MeshProber p = Make("a");
  p.SetPinglist(List({"b", "c"}), 0);
  p.SetTarget("b", Target(4096));
  p.SetTarget("c", Target(4096));
  p.SetTarget("z", Target(4096));  // not on the pinglist: ignored
  EXPECT_FALSE(p.HasTarget("z"));
  DueBetween(p, 0, kS);
  p.ExpireLost(3 * kS);
  EXPECT_FALSE(p.Snapshot(3 * kS).empty());
  p.SetPinglist(List({"c"}), 3 * kS);
  EXPECT_FALSE(p.HasTarget("b"));
  for (const SeriesWindow& w : p.Snapshot(3 * kS)) EXPECT_EQ(w.peer, "c");
  EXPECT_EQ(p.TorOf("c"), "tor-a");
  EXPECT_EQ(p.TorOf("b"), "");
}

TEST(MeshProber, SendFailedForgetsTheRequestWithoutCountingIt) {
  MeshProber p = Make("a");
  p.SetPinglist(List({"b"}), 0);
  p.SetTarget("b", Target(4096));
  std::vector<MeshRequest> requests = DueBetween(p, 0, kS);
  for (const MeshRequest& r : requests) p.SendFailed(r.id);
  EXPECT_EQ(p.pending(), 0u);
  EXPECT_TRUE(p.ExpireLost(10 * kS).empty());
  EXPECT_TRUE(p.Snapshot(10 * kS).empty());
}

// A peer that stops answering altogether (its agent restarted on a new
// QPN) is named once its last N probes were all lost, and not after an
// answer.
TEST(MeshProber, PeersLosingEveryProbeAreNamed) {
  MeshProber p = Make("a");
  p.SetPinglist(List({"b", "c"}), 0);
  p.SetTarget("b", Target(4096));
  p.SetTarget("c", Target(4096));
  std::vector<MeshRequest> requests = DueBetween(p, 0, 2 * kS);
  // c answers everything, b nothing.
  for (const MeshRequest& r : requests) {
    if (r.peer != "c") continue;
    absl::StatusOr<MeshAnswer> reply = MeshProber::Answer(r.bytes, 1, 2, false);
    ASSERT_TRUE(reply.ok());
    ASSERT_TRUE(p.OnReply(reply->bytes, 2 * kS, false).has_value());
  }
  p.ExpireLost(4 * kS);
  EXPECT_EQ(p.PeersLosingAll(10), std::vector<std::string>{"b"});
  EXPECT_TRUE(p.PeersLosingAll(21).empty());  // b lost 20
  // One answer from b clears it.
  std::vector<MeshRequest> more = DueBetween(p, 4 * kS, 4 * kS + 200 * kMs);
  for (const MeshRequest& r : more) {
    if (r.peer != "b") continue;
    absl::StatusOr<MeshAnswer> reply = MeshProber::Answer(r.bytes, 1, 2, false);
    ASSERT_TRUE(reply.ok());
    ASSERT_TRUE(p.OnReply(reply->bytes, 5 * kS, false).has_value());
    break;
  }
  EXPECT_TRUE(p.PeersLosingAll(10).empty());
}

TEST(MeshProber, TimeoutOutOfRangeIsRefusedByName) {
  MeshProberOptions options;
  options.timeout = absl::Milliseconds(1);
  absl::StatusOr<MeshProber> p = MeshProber::Create("a", options);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), testing::HasSubstr("timeout"));
  options = {};
  options.schedule.same_tor_per_second = 0;
  EXPECT_FALSE(MeshProber::Create("a", options).ok());
}

TEST(MeshProber, PendingIsBounded) {
  MeshProberOptions options;
  options.schedule.same_tor_per_second = 1000;
  options.timeout = absl::Seconds(30);
  MeshProber p = Make("a", options);
  Pinglist list;
  for (int i = 0; i < 100; ++i) list.entries.push_back({"p" + std::to_string(i), "tor-a", PeerScope::kSameTor});
  p.SetPinglist(list, 0);
  for (const PinglistEntry& e : list.entries) p.SetTarget(e.peer, Target(4096));
  // 100 peers x 1000/s x 1 s = 100,000 due; at most kMaxPending wait.
  DueBetween(p, 0, kS);
  EXPECT_EQ(p.pending(), kMaxPending);
  EXPECT_TRUE(p.Due(kS, 100, 4096).empty());
}

}  // namespace
}  // namespace roced::mesh
