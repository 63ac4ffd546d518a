// rocectl mesh --prometheus without a fleet: answers in the shape of
// Prometheus's /api/v1/query (instant vectors, as JSON) for four agents
// under two ToRs, one of them dead -> the members (the agents, a stand-in
// per ToR), the per-agent series with the far end as its ToR, and the
// report naming the dead host's RNIC; an agent whose roced_mesh_host_busy
// was 1 answers as busy, and is the host finding; error answers and bad URLs refused naming
// what; the HTTP GET against a server on loopback: the request line it
// sends, an answer whole, one too large, one that never comes; the TCP
// connect under it (util/tcp.h): by IPv4, IPv6 and name, refused, and one
// a full listen queue leaves unanswered.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/rocectl/mesh_format.h"
#include "tools/rocectl/mesh_prometheus.h"
#include "util/http_get.h"
#include "util/proto_time.h"
#include "util/tcp.h"

namespace roced::ctl {
namespace {

using ::testing::HasSubstr;
using roced::v1::PrometheusQueryResponse;

PrometheusQueryResponse Parse(const std::string& json) {
  absl::StatusOr<PrometheusQueryResponse> r = ParsePrometheusAnswer("test", 200, json);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : PrometheusQueryResponse();
}

std::string Vector(const std::vector<std::string>& samples) {
  return absl::StrCat(R"({"status":"success","data":{"resultType":"vector","result":[)", absl::StrJoin(samples, ","),
                      "]}}");
}

std::string Sample(const std::string& labels, double value) {
  return absl::StrCat(R"({"metric":{)", labels, R"(},"value":[1764770000.123,")", value, R"("]})");
}

// n1, n2 under tor1; n3, n4 under tor2; n4's RNIC dead: everything it
// sends is lost, and every probe to it. Across ToRs each agent probes one
// host of the other ToR; n1 and n3 happen to probe n4 (counted under tor2).
struct FourAgents {
  std::string info, sent, lost, p99;
  std::string busy = Vector({});
};
FourAgents DeadN4() {
  FourAgents f;
  std::vector<std::string> info, sent, lost;
  const char* tor[] = {"", "tor1", "tor1", "tor2", "tor2"};
  for (int i = 1; i <= 4; ++i) {
    info.push_back(Sample(absl::StrCat(R"("instance":"10.0.0.)", i, R"(:9471","node":"n)", i, R"(","tor":")", tor[i],
                                       R"(","pod":"p1")"),
                          1));
  }
  // (prober, peer_tor, peer, sent, lost) for 64 B and 1024 B at DSCP 26.
  struct Row {
    int prober;
    const char* peer_tor;
    const char* peer;
    double sent, lost;
  };
  const Row rows[] = {
      {1, "tor1", "n2", 300, 0},  {2, "tor1", "n1", 300, 0},  {3, "tor2", "n4", 300, 300}, {4, "tor2", "n3", 300, 300},
      {1, "tor2", "", 30.4, 30},  {2, "tor2", "", 29.6, 0},   {3, "tor1", "", 30, 0},       {4, "tor1", "", 30, 30},
  };
  for (const Row& r : rows) {
    for (int size : {64, 1024}) {
      const std::string labels =
          absl::StrCat(R"("instance":"10.0.0.)", r.prober, R"(:9471","tor":")", tor[r.prober], R"(","peer_tor":")",
                       r.peer_tor, R"(","peer":")", r.peer, R"(","size":")", size, R"(","dscp":"26")");
      sent.push_back(Sample(labels, r.sent));
      lost.push_back(Sample(labels, r.lost));
    }
  }
  f.info = Vector(info);
  f.sent = Vector(sent);
  f.lost = Vector(lost);
  f.p99 = Vector({Sample(R"("instance":"10.0.0.1:9471","peer_tor":"tor1","peer":"n2")", 0.000042)});
  return f;
}

TEST(MeshPrometheus, ADeadHostIsNamedFromTheRecordedSeries) {
  const FourAgents f = DeadN4();
  absl::StatusOr<MeshFromPrometheus> from = MeshFromPrometheusAnswers(Parse(f.info), Parse(f.sent), Parse(f.lost),
                                                                     Parse(f.p99), Parse(f.busy), absl::Seconds(60));
  ASSERT_TRUE(from.ok()) << from.status();
  std::vector<std::string> names;
  for (const mesh::Member& m : from->members) names.push_back(absl::StrCat(m.name, m.stands_for_tor ? "!" : ""));
  EXPECT_THAT(names, ::testing::UnorderedElementsAre("n1", "n2", "n3", "n4", "tor1/*!", "tor2/*!"));
  ASSERT_EQ(from->answers.size(), 4u);
  const MeshAnswer& n1 = from->answers[0];
  EXPECT_EQ(n1.name, "n1");
  EXPECT_EQ(n1.address, "10.0.0.1:9471");
  ASSERT_TRUE(n1.response.has_value());
  EXPECT_EQ(n1.response->tor(), "tor1");
  ASSERT_EQ(n1.response->series_size(), 4);
  std::map<std::string, const roced::v1::MeshSeries*> by_peer;
  for (const auto& s : n1.response->series()) by_peer[absl::StrCat(s.peer(), "/", s.size_bytes())] = &s;
  ASSERT_EQ(by_peer.count("tor2/*/64"), 1u);
  EXPECT_EQ(by_peer["tor2/*/64"]->sent(), 30u);  // 30.4 rounded
  EXPECT_EQ(by_peer["tor2/*/64"]->lost(), 30u);
  EXPECT_EQ(absl::ToInt64Microseconds(util::FromProto(by_peer["n2/64"]->rtt_p99())), 42);

  absl::StatusOr<roced::v1::MeshReport> report =
      BuildMeshReport(from->members, from->answers, mesh::LocalizeOptions{});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_GE(report->suspects_size(), 1) << report->DebugString();
  EXPECT_EQ(report->suspects(0).kind(), "rnic");
  EXPECT_EQ(report->suspects(0).component(), "n4");
  EXPECT_EQ(report->suspects_size(), 1) << report->DebugString();
  EXPECT_EQ(report->series_skipped(), 0u);
  EXPECT_EQ(report->agents_answered(), 4u);
}

// n4's agent said its host was busy within the window (say, CPU starved):
// its answer carries that, and the finding on n4 is the host, not its RNIC.
TEST(MeshPrometheus, AHostBusyInTheWindowIsTheHostFinding) {
  FourAgents f = DeadN4();
  f.busy = Vector({Sample(R"("instance":"10.0.0.4:9471")", 1), Sample(R"("instance":"10.0.0.2:9471")", 0)});
  absl::StatusOr<MeshFromPrometheus> from = MeshFromPrometheusAnswers(Parse(f.info), Parse(f.sent), Parse(f.lost),
                                                                     Parse(f.p99), Parse(f.busy), absl::Seconds(60));
  ASSERT_TRUE(from.ok()) << from.status();
  ASSERT_EQ(from->answers.size(), 4u);
  EXPECT_EQ(from->answers[1].response->host_busy(), "");
  EXPECT_THAT(from->answers[3].response->host_busy(), HasSubstr("roced_mesh_host_busy was 1 within the last 1m"));
  absl::StatusOr<roced::v1::MeshReport> report =
      BuildMeshReport(from->members, from->answers, mesh::LocalizeOptions{});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_GE(report->suspects_size(), 1) << report->DebugString();
  EXPECT_EQ(report->suspects(0).kind(), "host");
  EXPECT_EQ(report->suspects(0).component(), "n4");
  EXPECT_THAT(report->suspects(0).host_reason(), HasSubstr("roced_mesh_host_busy"));
}

TEST(MeshPrometheus, SeriesWithoutInfoOrReadableLabelsAreSetAside) {
  FourAgents f = DeadN4();
  const std::string extra = Sample(
      R"("instance":"10.0.0.9:9471","tor":"tor3","peer_tor":"tor1","peer":"","size":"64","dscp":"26")", 10);
  const std::string bad = Sample(
      R"("instance":"10.0.0.1:9471","tor":"tor1","peer_tor":"tor2","peer":"","size":"x","dscp":"26")", 10);
  f.sent = f.sent.substr(0, f.sent.size() - 3) + "," + extra + "," + bad + "]}}";
  absl::StatusOr<MeshFromPrometheus> from = MeshFromPrometheusAnswers(Parse(f.info), Parse(f.sent), Parse(f.lost),
                                                                     Parse(f.p99), Parse(f.busy), absl::Seconds(60));
  ASSERT_TRUE(from.ok()) << from.status();
  EXPECT_EQ(from->series_unreadable, 1u);
  ASSERT_EQ(from->answers.size(), 5u);
  EXPECT_EQ(from->answers[4].address, "10.0.0.9:9471");
  EXPECT_FALSE(from->answers[4].response.has_value());
  EXPECT_THAT(from->answers[4].error, HasSubstr("roced_mesh_info"));
}

TEST(MeshPrometheus, ErrorAnswersAreRefusedNamingWhat) {
  absl::StatusOr<PrometheusQueryResponse> e = ParsePrometheusAnswer(
      "q", 400, R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})");
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("bad_data: parse error at char 5"));
  e = ParsePrometheusAnswer("q", 503, "Service Unavailable");
  EXPECT_EQ(e.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(e.status().message(), HasSubstr("HTTP 503"));
  e = ParsePrometheusAnswer("q", 200, "<html>");
  EXPECT_EQ(e.status().code(), absl::StatusCode::kDataLoss);
  const PrometheusQueryResponse matrix = Parse(R"({"status":"success","data":{"resultType":"matrix","result":[]}})");
  const PrometheusQueryResponse empty = Parse(Vector({}));
  absl::StatusOr<MeshFromPrometheus> m =
      MeshFromPrometheusAnswers(empty, matrix, empty, empty, empty, absl::Seconds(60));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("probes sent: resultType \"matrix\""));
}

TEST(MeshPrometheus, QueriesCarryTheWindow) {
  const PrometheusMeshQueries q = MeshQueries(absl::Minutes(2));
  EXPECT_THAT(q.sent, HasSubstr("increase(roced_mesh_probes_sent_total[120s])"));
  EXPECT_THAT(q.lost, HasSubstr("increase(roced_mesh_probes_lost_total[120s])"));
  EXPECT_THAT(q.p99, HasSubstr("rate(roced_mesh_rtt_seconds_bucket[120s])"));
  EXPECT_THAT(q.info, HasSubstr("roced_mesh_info"));
  // Busy now, not at any time in the window.
  EXPECT_EQ(q.busy, "max by (instance) (roced_mesh_host_busy)");
}

TEST(HttpUrl, ParsedOrRefusedNamingTheFlag) {
  absl::StatusOr<util::HttpUrl> u = util::ParseHttpUrl("--prometheus", "http://prom.example:9090/prom/");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "prom.example");
  EXPECT_EQ(u->port, 9090);
  EXPECT_EQ(u->base_path, "/prom");
  u = util::ParseHttpUrl("--prometheus", "http://[::1]:9090");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(util::ParseHttpUrl("--prometheus", "http://p")->port, 80);
  EXPECT_EQ(util::ParseHttpUrl("--prometheus", "https://p").status().code(), absl::StatusCode::kUnimplemented);
  for (const char* bad : {"p:9090", "http://", "http://p:0", "http://p:99999", "http://p:x", "http://[::1"}) {
    absl::StatusOr<util::HttpUrl> r = util::ParseHttpUrl("--prometheus", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("--prometheus")) << bad;
  }
  EXPECT_EQ(util::UrlEncode("sum by (a) (x[60s])"), "sum%20by%20%28a%29%20%28x%5B60s%5D%29");
}

// A server on loopback that reads one request and answers `reply` (none
// when empty: it holds the connection until the test ends).
class OneShotServer {
 public:
  explicit OneShotServer(std::string reply) : reply_(std::move(reply)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_, 1);
    thread_ = std::thread([this] {
      const int c = accept(fd_, nullptr, nullptr);
      char buf[4096];
      const ssize_t n = read(c, buf, sizeof(buf));
      if (n > 0) request_.assign(buf, static_cast<size_t>(n));
      if (!reply_.empty()) {
        for (size_t off = 0; off < reply_.size();) {
          // MSG_NOSIGNAL: a client that stops reading (an answer too
          // large) closes on us; EPIPE ends the loop, not the test.
          const ssize_t w = send(c, reply_.data() + off, reply_.size() - off, MSG_NOSIGNAL);
          if (w <= 0) break;
          off += static_cast<size_t>(w);
        }
      } else {
        while (!done_) usleep(10000);  // why: the stalled server under test
      }
      close(c);
    });
  }
  ~OneShotServer() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
    close(fd_);
  }
  uint16_t port() const { return port_; }
  // What the client sent, once the server has answered and closed.
  const std::string& request() {
    if (thread_.joinable()) thread_.join();
    return request_;
  }

 private:
  std::string reply_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::string request_;
  std::atomic<bool> done_{false};
};

TEST(HttpGet, SendsOneRequestAndReadsTheAnswerWhole) {
  const std::string body = Vector({});
  std::string reply = absl::StrCat("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n", body);
  absl::StatusOr<util::HttpResponse> r;
  std::string request;
  {
    OneShotServer server(reply);
    util::HttpUrl url{"127.0.0.1", server.port(), "/prom"};
    r = util::HttpGet(url, "/api/v1/query?query=up", absl::Seconds(5), 1 << 20);
  }
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->content_type, "application/json");
  EXPECT_EQ(r->body, body);
}

TEST(HttpGet, TheRequestLineHasThePrefixAndTheQuery) {
  OneShotServer server("HTTP/1.0 200 OK\r\n\r\n{}");
  util::HttpUrl url{"127.0.0.1", server.port(), "/prom"};
  ASSERT_TRUE(util::HttpGet(url, "/api/v1/query?query=up", absl::Seconds(5), 1 << 20).ok());
  EXPECT_THAT(server.request(), ::testing::StartsWith("GET /prom/api/v1/query?query=up HTTP/1.0\r\n"));
}

TEST(HttpGet, AnAnswerTooLargeOrTooLateIsRefused) {
  {
    OneShotServer server(absl::StrCat("HTTP/1.0 200 OK\r\n\r\n", std::string(100000, 'x')));
    absl::StatusOr<util::HttpResponse> r =
        util::HttpGet({"127.0.0.1", server.port(), ""}, "/", absl::Seconds(5), 50000);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  }
  {
    OneShotServer server("");
    absl::StatusOr<util::HttpResponse> r =
        util::HttpGet({"127.0.0.1", server.port(), ""}, "/", absl::Milliseconds(300), 50000);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  }
  {
    OneShotServer server("SSH-2.0-OpenSSH\r\n\r\n");
    absl::StatusOr<util::HttpResponse> r = util::HttpGet({"127.0.0.1", server.port(), ""}, "/", absl::Seconds(5), 50000);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << r.status();
  }
}

// A listening socket on loopback (`family` AF_INET or AF_INET6) with the
// given backlog that never accepts; port 0 when it cannot be made.
struct Listener {
  util::UniqueFd fd;
  uint16_t port = 0;
};
Listener Listen(int family, int backlog) {
  Listener l;
  l.fd = util::UniqueFd(socket(family, SOCK_STREAM, 0));
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    len = sizeof(*a);
  }
  if (l.fd.get() < 0 || bind(l.fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
      listen(l.fd.get(), backlog) != 0 || getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return {};
  }
  l.port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                   : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return l;
}

// The port `fd` is connected to (0 when it is not connected): the
// connection is real, not just a descriptor.
uint16_t PeerPort(const util::UniqueFd& fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  return ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                       : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

TEST(ConnectTcp, ReachesAListenerByIPv4AddressOrName) {
  Listener l = Listen(AF_INET, 8);
  ASSERT_NE(l.port, 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  absl::StatusOr<util::UniqueFd> by_address = util::ConnectTcp("127.0.0.1", l.port, deadline);
  ASSERT_TRUE(by_address.ok()) << by_address.status();
  EXPECT_EQ(PeerPort(*by_address), l.port);
  // "localhost" may resolve to ::1 first, where nothing listens: the next
  // address is tried.
  absl::StatusOr<util::UniqueFd> by_name = util::ConnectTcp("localhost", l.port, deadline);
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  EXPECT_EQ(PeerPort(*by_name), l.port);
}

TEST(ConnectTcp, ReachesAListenerByIPv6Address) {
  Listener l = Listen(AF_INET6, 8);
  if (l.port == 0) GTEST_SKIP() << "no IPv6 loopback (::1) to listen on here";
  absl::StatusOr<util::UniqueFd> fd = util::ConnectTcp("::1", l.port, absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(PeerPort(*fd), l.port);
}

TEST(ConnectTcp, ARefusedConnectionIsUnavailableNamingHostAndPort) {
  uint16_t port = 0;
  {
    Listener l = Listen(AF_INET, 1);  // a port just free again
    ASSERT_NE(l.port, 0);
    port = l.port;
  }
  absl::StatusOr<util::UniqueFd> fd = util::ConnectTcp("127.0.0.1", port, absl::Now() + absl::Seconds(5));
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kUnavailable) << fd.status();
  EXPECT_THAT(fd.status().message(), HasSubstr(absl::StrCat("127.0.0.1:", port, ": cannot connect")));
}

TEST(ConnectTcp, AConnectionTheListenerCannotQueueRunsIntoTheDeadline) {
  // Backlog 0 queues one connection; the kernel drops the next SYN, so that
  // connect stays in progress until the deadline.
  Listener l = Listen(AF_INET, 0);
  ASSERT_NE(l.port, 0);
  absl::StatusOr<util::UniqueFd> first = util::ConnectTcp("127.0.0.1", l.port, absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<util::UniqueFd> second =
      util::ConnectTcp("127.0.0.1", l.port, absl::Now() + absl::Milliseconds(200));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kDeadlineExceeded) << second.status();
  EXPECT_THAT(second.status().message(), HasSubstr(absl::StrCat("127.0.0.1:", l.port)));
}

}  // namespace
}  // namespace roced::ctl
