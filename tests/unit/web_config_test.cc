// The web config parser (agent/web_config) and basic authentication
// (agent/basic_auth): every refusal names the field and what is allowed.
#include <crypt.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/serve/basic_auth.h"
#include "agent/serve/metrics_endpoint.h"
#include "agent/serve/tls_server_context.h"
#include "agent/serve/web_config.h"
#include "model/readiness.h"
#include "test_certs.h"
#include "util/http_get.h"
#include "util/tcp.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace roced::agent {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kHash[] = "$2y$10$ppZW0YI5vC0E4iSXxJRm1OXT.3GRni5zsxzFwr9RQKK5/PP/xMzce";

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<WebConfig> c = ParseWebConfig(text, "/etc/roced");
  EXPECT_FALSE(c.ok()) << text;
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

TEST(WebConfig, EmptyFileIsPlainHttpWithoutAuth) {
  for (const char* text : {"", "\n", "# nothing\n", "---\n"}) {
    absl::StatusOr<WebConfig> c = ParseWebConfig(text, "/etc/roced");
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_FALSE(c->tls.has_value());
    EXPECT_TRUE(c->basic_auth_users.empty());
  }
}

TEST(WebConfig, FullFileParsesWithRelativePathsFromItsDirectory) {
  absl::StatusOr<WebConfig> c = ParseWebConfig(
      "tls_server_config:\n"
      "  cert_file: tls/server.crt\n"
      "  key_file: /secure/server.key\n"
      "  client_auth_type: RequireAndVerifyClientCert\n"
      "  client_ca_file: ../ca.crt\n"
      "  min_version: TLS13\n"
      "basic_auth_users:\n"
      "  alice: " + std::string(kHash) + "\n",
      "/etc/roced");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->tls.has_value());
  EXPECT_EQ(c->tls->cert_file, "/etc/roced/tls/server.crt");
  EXPECT_EQ(c->tls->key_file, "/secure/server.key");
  EXPECT_EQ(c->tls->client_ca_file, "/etc/ca.crt");
  EXPECT_EQ(c->tls->client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_EQ(c->tls->min_version, TlsVersion::kTls13);
  EXPECT_EQ(c->tls->max_version, TlsVersion::kTls13);
  EXPECT_EQ(c->basic_auth_users.at("alice"), kHash);
}

TEST(WebConfig, DefaultsAreNoClientCertAndTls12) {
  absl::StatusOr<WebConfig> c =
      ParseWebConfig("tls_server_config: {cert_file: a.crt, key_file: a.key}\n", "/d");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tls->client_auth, ClientAuth::kNoClientCert);
  EXPECT_EQ(c->tls->min_version, TlsVersion::kTls12);
  EXPECT_EQ(c->tls->cert_file, "/d/a.crt");
  EXPECT_TRUE(c->basic_auth_users.empty());
}

TEST(WebConfig, LoadResolvesPathsAgainstTheFilesDirectory) {
  const std::string dir = testing::TempDir();
  const std::string path = dir + "/web-config-load.yaml";
  std::ofstream(path) << "tls_server_config:\n  cert_file: s.crt\n  key_file: s.key\n";
  absl::StatusOr<WebConfig> c = LoadWebConfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->tls->cert_file, AllOf(HasSubstr("s.crt"), ::testing::StartsWith("/")));
  EXPECT_EQ(c->tls->cert_file.substr(0, c->tls->cert_file.size() - 6),
            c->tls->key_file.substr(0, c->tls->key_file.size() - 6));
}

TEST(WebConfig, TheDeployExampleIsValid) {
  const std::string dir = std::string(ROCED_SOURCE_DIR) + "/deploy/examples";
  absl::StatusOr<WebConfig> c = LoadWebConfig(dir + "/web-config.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->tls.has_value());
  EXPECT_EQ(c->tls->cert_file, dir + "/tls/server.crt");
  EXPECT_EQ(c->tls->client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_EQ(c->basic_auth_users.size(), 1u);
}

TEST(WebConfig, LoadRefusesAnOversizedFileNamingThePathAndTheLimit) {
  const std::string path = testing::TempDir() + "/web-config-big.yaml";
  std::ofstream(path) << std::string(kMaxWebConfigBytes + 1, '#');
  absl::StatusOr<WebConfig> c = LoadWebConfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), AllOf(HasSubstr(path), HasSubstr("65536")));
}

TEST(WebConfig, LoadOfAMissingFileNamesIt) {
  absl::StatusOr<WebConfig> c = LoadWebConfig("/nonexistent/web.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(c.status().message(), HasSubstr("/nonexistent/web.yaml"));
}

TEST(WebConfig, UnknownTopLevelKeyIsNamedWithTheAllowedOnes) {
  EXPECT_THAT(ErrorOf("tls_config:\n  cert_file: a\n"),
              AllOf(HasSubstr("line 1"), HasSubstr("'tls_config'"), HasSubstr("unknown field"),
                    HasSubstr("tls_server_config, basic_auth_users")));
}

TEST(WebConfig, UnknownTlsKeyIsNamedWithTheAllowedOnes) {
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n  certfile: c\n"),
              AllOf(HasSubstr("line 4"), HasSubstr("tls_server_config.certfile"),
                    HasSubstr("cert_file, key_file, client_auth_type, client_ca_file, min_version, "
                              "max_version")));
}

TEST(WebConfig, NodeExporterOptionsRocedCannotHonourAreRefusedByName) {
  for (const char* key : {"cipher_suites", "curve_preferences", "client_allowed_sans", "cert"}) {
    EXPECT_THAT(ErrorOf(std::string("tls_server_config:\n  cert_file: a\n  key_file: b\n  ") + key +
                        ": [x]\n"),
                AllOf(HasSubstr(std::string("tls_server_config.") + key),
                      HasSubstr("roced does not support"), HasSubstr("supported: cert_file")));
  }
  EXPECT_THAT(ErrorOf("http_server_config:\n  http2: false\n"),
              AllOf(HasSubstr("http_server_config"), HasSubstr("does not support")));
}

TEST(WebConfig, ClientAuthTypeOutsideTheFiveIsRefusedListingThem) {
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                      "  client_auth_type: RequireClientCert\n"),
              AllOf(HasSubstr("tls_server_config.client_auth_type"),
                    HasSubstr("'RequireClientCert'"),
                    HasSubstr("NoClientCert, RequestClientCert, RequireAnyClientCert, "
                              "VerifyClientCertIfGiven, RequireAndVerifyClientCert")));
}

TEST(WebConfig, VersionsOutsideTls10To13AreRefusedListingThem) {
  for (const char* field : {"min_version", "max_version"}) {
    EXPECT_THAT(ErrorOf(std::string("tls_server_config:\n  cert_file: a\n  key_file: b\n  ") +
                        field + ": TLS1.2\n"),
                AllOf(HasSubstr(std::string("tls_server_config.") + field),
                      HasSubstr("TLS10, TLS11, TLS12, TLS13")));
  }
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n"
                      "  max_version: TLS12\n"),
              AllOf(HasSubstr("tls_server_config.max_version"), HasSubstr("below min_version TLS13")));
}

TEST(WebConfig, CertAndKeyAreRequired) {
  EXPECT_THAT(ErrorOf("tls_server_config:\n  key_file: b\n"),
              HasSubstr("tls_server_config.cert_file: required"));
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n"),
              HasSubstr("tls_server_config.key_file: required"));
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: ''\n  key_file: b\n"),
              HasSubstr("tls_server_config.cert_file: must be a file path"));
  EXPECT_THAT(ErrorOf("tls_server_config:\n"),
              AllOf(HasSubstr("tls_server_config: is empty"), HasSubstr("cert_file and key_file")));
}

TEST(WebConfig, VerifyingModesNeedTheCaAndOthersRefuseIt) {
  for (const char* mode : {"VerifyClientCertIfGiven", "RequireAndVerifyClientCert"}) {
    EXPECT_THAT(ErrorOf(std::string("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                                    "  client_auth_type: ") + mode + "\n"),
                AllOf(HasSubstr("tls_server_config.client_ca_file: required"), HasSubstr(mode)));
  }
  for (const char* mode : {"NoClientCert", "RequestClientCert", "RequireAnyClientCert"}) {
    EXPECT_THAT(ErrorOf(std::string("tls_server_config:\n  cert_file: a\n  key_file: b\n"
                                    "  client_ca_file: ca.crt\n  client_auth_type: ") + mode + "\n"),
                AllOf(HasSubstr("tls_server_config.client_ca_file"),
                      HasSubstr("VerifyClientCertIfGiven or RequireAndVerifyClientCert"),
                      HasSubstr(mode)));
  }
}

TEST(WebConfig, BasicAuthUsersNeedBcryptHashes) {
  EXPECT_THAT(ErrorOf("basic_auth_users:\n  alice: secret\n"),
              AllOf(HasSubstr("line 2"), HasSubstr("basic_auth_users.alice"),
                    HasSubstr("not a bcrypt hash"), HasSubstr("$2a$, $2b$ or $2y$")));
  // MD5-crypt ($1$) and SHA-512-crypt ($6$) are not bcrypt.
  EXPECT_THAT(ErrorOf("basic_auth_users:\n  bob: $6$abc$def\n"), HasSubstr("basic_auth_users.bob"));
  EXPECT_THAT(ErrorOf("basic_auth_users:\n  \"a:b\": " + std::string(kHash) + "\n"),
              AllOf(HasSubstr("basic_auth_users.a:b"), HasSubstr("without ':'")));
  EXPECT_THAT(ErrorOf("basic_auth_users:\n"), HasSubstr("basic_auth_users: is empty"));
  EXPECT_THAT(ErrorOf("basic_auth_users: [alice]\n"),
              HasSubstr("basic_auth_users: must be a mapping"));
}

TEST(WebConfig, ADuplicateKeyIsRefused) {
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n  cert_file: b\n  key_file: c\n"),
              AllOf(HasSubstr("tls_server_config.cert_file"), HasSubstr("given twice")));
}

TEST(WebConfig, NotAMappingOrNotYamlIsRefused) {
  EXPECT_THAT(ErrorOf("- a\n- b\n"), HasSubstr("must be a mapping of tls_server_config"));
  EXPECT_THAT(ErrorOf("tls_server_config: [\n"), HasSubstr("not YAML"));
  EXPECT_THAT(ErrorOf("tls_server_config: {cert_file: [a], key_file: b}\n"),
              HasSubstr("tls_server_config.cert_file: must be a string"));
}

TEST(BcryptHash, FormatCheck) {
  EXPECT_TRUE(IsBcryptHash(kHash));
  EXPECT_TRUE(IsBcryptHash("$2a$04$ppZW0YI5vC0E4iSXxJRm1OXT.3GRni5zsxzFwr9RQKK5/PP/xMzce"));
  EXPECT_FALSE(IsBcryptHash("$2x$10$ppZW0YI5vC0E4iSXxJRm1OXT.3GRni5zsxzFwr9RQKK5/PP/xMzce"));
  EXPECT_FALSE(IsBcryptHash("$2y$03$ppZW0YI5vC0E4iSXxJRm1OXT.3GRni5zsxzFwr9RQKK5/PP/xMzce"));
  EXPECT_FALSE(IsBcryptHash("$2y$10$ppZW0YI5vC0E4iSXxJRm1OXT.3GRni5zsxzFwr9RQKK5/PP/xMzc"));
  EXPECT_FALSE(IsBcryptHash("$2y$10$ppZW0YI5vC0E4iSXxJRm1OXT.3GRni5zsxzFwr9RQKK5/PP/xMz!"));
}

// A cost-4 hash made at test time (fast), as htpasswd -B makes them.
std::string HashOf(const std::string& password) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2y$", 4, nullptr, 0, setting, sizeof(setting)), nullptr);
  crypt_data data{};
  return crypt_rn(password.c_str(), setting, &data, sizeof(data));
}

TEST(BasicAuth, RightPasswordPassesWrongOnesAndUnknownUsersDoNot) {
  BasicAuth auth({{"alice", HashOf("s3cret")}});
  EXPECT_TRUE(auth.Check("alice", "s3cret"));
  EXPECT_FALSE(auth.Check("alice", "s3cre"));
  EXPECT_FALSE(auth.Check("alice", ""));
  EXPECT_FALSE(auth.Check("bob", "s3cret"));
  EXPECT_FALSE(auth.Check("alice", std::string("s3cret\0x", 8)));
}

TEST(BasicAuth, ARepeatedSuccessIsServedFromTheCacheAndAFailureNeverIs) {
  BasicAuth auth({{"alice", HashOf("s3cret")}});
  ASSERT_TRUE(auth.Check("alice", "s3cret"));
  const auto runs = auth.hash_runs();
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(auth.Check("alice", "s3cret"));
  EXPECT_EQ(auth.hash_runs(), runs);
  EXPECT_FALSE(auth.Check("alice", "wrong"));
  EXPECT_FALSE(auth.Check("alice", "wrong"));
  EXPECT_EQ(auth.hash_runs(), runs + 2);
  // A cached user with another password is checked again (and fails).
  EXPECT_TRUE(auth.Check("alice", "s3cret"));
  EXPECT_EQ(auth.hash_runs(), runs + 2);
}

TEST(BasicAuth, TheCacheHoldsAtMostItsBoundOfUsers) {
  std::map<std::string, std::string> users;
  const std::string hash = HashOf("pw");
  for (std::size_t i = 0; i <= kAuthCacheEntries; ++i) users["u" + std::to_string(i)] = hash;
  BasicAuth auth(users);
  for (const auto& [user, h] : users) ASSERT_TRUE(auth.Check(user, "pw"));
  const auto runs = auth.hash_runs();
  // u0 was the least recently used when u64 came in: it had to go.
  EXPECT_TRUE(auth.Check("u0", "pw"));
  EXPECT_EQ(auth.hash_runs(), runs + 1);
  EXPECT_TRUE(auth.Check("u64", "pw"));
  EXPECT_EQ(auth.hash_runs(), runs + 1);
}

TEST(BasicAuth, BcryptMatchesAllThreePrefixes) {
  for (const char* prefix : {"$2a$", "$2b$", "$2y$"}) {
    char setting[CRYPT_GENSALT_OUTPUT_SIZE];
    ASSERT_NE(crypt_gensalt_rn(prefix, 4, nullptr, 0, setting, sizeof(setting)), nullptr) << prefix;
    crypt_data data{};
    const std::string hash = crypt_rn("pw", setting, &data, sizeof(data));
    EXPECT_TRUE(BcryptMatches(hash, "pw")) << hash;
    EXPECT_FALSE(BcryptMatches(hash, "pW")) << hash;
  }
}

}  // namespace
}  // namespace roced::agent

namespace roced::agent {
namespace {

// GET /readyz from an endpoint on 127.0.0.1 (an ephemeral port).
absl::StatusOr<util::HttpResponse> GetReadyz(const MetricsEndpoint& ep, const std::string& query = "") {
  util::HttpUrl url{"127.0.0.1", static_cast<uint16_t>(ep.GetListeningPorts().at(0)), ""};
  return util::HttpGet(url, "/readyz" + query, absl::Seconds(10), 1 << 16);
}

// /readyz answers from the readiness it is given, on every request: 200
// "ok" (the checks with ?verbose), 503 with the checks, and 401 without the
// credentials /metrics asks for.
TEST(MetricsEndpoint, ReadyzAnswersTheReadinessOfEachRequest) {
  // Declared before the endpoint: its threads call the lambda until it is gone.
  std::mutex mu;
  model::Readiness now{true, {{"converged", true, "generation 3"}, {"confirmed", true, "no provisional config"}}};
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> ep = MetricsEndpoint::Start("127.0.0.1:0", WebConfig{});
  ASSERT_TRUE(ep.ok()) << ep.status();
  (*ep)->ServeReadiness([&] {
    std::lock_guard<std::mutex> lock(mu);
    return now;
  });
  absl::StatusOr<util::HttpResponse> r = GetReadyz(**ep);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok\n");
  r = GetReadyz(**ep, "?verbose");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "[+]converged ok\n[+]confirmed ok\nreadyz check passed\n");
  {
    std::lock_guard<std::mutex> lock(mu);
    now.ready = false;
    now.checks[1] = {"confirmed", false, "generation 4 is provisional"};
  }
  r = GetReadyz(**ep);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "[+]converged ok\n[-]confirmed failed: generation 4 is provisional\nreadyz check failed\n");
}

TEST(MetricsEndpoint, ReadyzAsksForTheSameCredentialsAsMetrics) {
  WebConfig web;
  web.basic_auth_users = {{"alice", HashOf("s3cret")}};
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> ep = MetricsEndpoint::Start("127.0.0.1:0", web);
  ASSERT_TRUE(ep.ok()) << ep.status();
  (*ep)->ServeReadiness([] { return model::Readiness{true, {}}; });
  absl::StatusOr<util::HttpResponse> r = GetReadyz(**ep);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 401);
}

// Stopping an endpoint does not wait out its listening thread's poll()
// (civetweb's, 2 s at a time, restarted by every connection): five starts
// and stops, each right after a request, take well under the 10 s the
// polls alone would, because the destructor knocks. On IPv4 loopback, the
// IPv4 wildcard and the dual-stack wildcard (both knocked on at 127.0.0.1).
TEST(MetricsEndpoint, StopsWithoutWaitingOutTheListenersPoll) {
  for (const std::string listen : {"127.0.0.1:0", "0", "+0"}) {
    const absl::Time t0 = absl::Now();
    for (int i = 0; i < 5; ++i) {
      absl::StatusOr<std::unique_ptr<MetricsEndpoint>> ep = MetricsEndpoint::Start(listen, WebConfig{});
      ASSERT_TRUE(ep.ok()) << listen << ": " << ep.status();
      (*ep)->ServeReadiness([] { return model::Readiness{true, {}}; });
      absl::StatusOr<util::HttpResponse> r = GetReadyz(**ep);
      ASSERT_TRUE(r.ok()) << listen << ": " << r.status();
      ep->reset();
    }
    EXPECT_LT(absl::Now() - t0, absl::Seconds(3)) << listen << ": five starts and stops";
  }
}

// Keeps `n` TCP connections to 127.0.0.1:port open that send nothing, each
// reopened as soon as the server closes it (a slowloris attack), until
// destroyed. reopened() counts the reopenings.
class IdleConnections {
 public:
  IdleConnections(uint16_t port, int n) : port_(port), n_(n) {
    thread_ = std::thread([this] { Run(); });
  }
  ~IdleConnections() {
    stop_.store(true);
    thread_.join();
  }
  int reopened() const { return reopened_.load(); }
  int open() const { return open_.load(); }

 private:
  void Run() {
    std::vector<util::UniqueFd> fds;
    while (!stop_.load()) {
      while (static_cast<int>(fds.size()) < n_ && !stop_.load()) {
        absl::StatusOr<util::UniqueFd> fd = util::ConnectTcp("127.0.0.1", port_, absl::Now() + absl::Seconds(1));
        if (fd.ok()) fds.push_back(*std::move(fd));
      }
      open_.store(static_cast<int>(fds.size()));
      std::vector<pollfd> p;
      for (const util::UniqueFd& fd : fds) p.push_back({fd.get(), POLLIN, 0});
      if (::poll(p.data(), p.size(), 20) <= 0) continue;
      std::vector<util::UniqueFd> still;
      for (size_t i = 0; i < fds.size(); ++i) {
        char byte;
        if (p[i].revents != 0 && ::recv(fds[i].get(), &byte, 1, MSG_DONTWAIT) <= 0) {
          reopened_.fetch_add(1);
          continue;  // closed by the server: dropped, reopened above
        }
        still.push_back(std::move(fds[i]));
      }
      fds = std::move(still);
    }
  }

  const uint16_t port_;
  const int n_;
  std::atomic<bool> stop_{false};
  std::atomic<int> reopened_{0};
  std::atomic<int> open_{0};
  std::thread thread_;
};

// Slowloris: six connections that send nothing, reopened as soon as they
// are closed, do not keep /metrics and /readyz from answering, each within
// 2 s, for longer than the request timeout (so the idle ones are cut and
// reopened during the test). With civetweb's 2 workers and its 30 s
// request timeout (the old settings) the first scrape already timed out.
TEST(MetricsEndpoint, SlowlorisIdleConnectionsDoNotBlockScrapes) {
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> ep = MetricsEndpoint::Start("127.0.0.1:0", WebConfig{});
  ASSERT_TRUE(ep.ok()) << ep.status();
  (*ep)->ServeReadiness([] { return model::Readiness{true, {}}; });
  const auto port = static_cast<uint16_t>((*ep)->GetListeningPorts().at(0));
  util::HttpUrl url{"127.0.0.1", port, ""};
  IdleConnections idle(port, 6);
  const absl::Time until = absl::Now() + absl::Milliseconds(kMetricsRequestTimeoutMs) + absl::Seconds(2);
  absl::Duration slowest;
  int scrapes = 0;
  while (absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(200));  // why: scrapes spread over a span of real time
    ASSERT_EQ(idle.open(), 6) << "the attack holds its six connections";
    for (const char* path : {"/metrics", "/readyz"}) {
      const absl::Time t0 = absl::Now();
      absl::StatusOr<util::HttpResponse> r = util::HttpGet(url, path, absl::Seconds(2), 1 << 20);
      ASSERT_TRUE(r.ok()) << path << " during the attack (scrape " << scrapes << "): " << r.status();
      EXPECT_EQ(r->status, 200) << path;
      slowest = std::max(slowest, absl::Now() - t0);
      ++scrapes;
    }
  }
  EXPECT_GE(idle.reopened(), 6) << "the server cut the idle connections (request timeout) and they came back";
  std::cout << scrapes << " scrapes during the attack, slowest " << slowest << ", idle connections reopened "
            << idle.reopened() << " times\n";
}

// Debian 12's civetweb has no IPv6: "+PORT" ("[::]:PORT") then serves
// IPv4 only, which the agent's health says, and an IPv6 address is refused
// saying what to give instead of civetweb's "null context". Where civetweb
// has IPv6, both reach the endpoint.
TEST(MetricsEndpoint, IPv6IsServedOnlyWhereCivetwebHasItAndRefusedClearlyWhereNot) {
  const bool v6 = MetricsEndpoint::CanListenOnIpv6();
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> any = MetricsEndpoint::Start("+0", WebConfig{});
  ASSERT_TRUE(any.ok()) << any.status();
  const auto port = static_cast<uint16_t>((*any)->GetListeningPorts().at(0));
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  EXPECT_TRUE(util::ConnectTcp("127.0.0.1", port, deadline).ok());
  absl::StatusOr<util::UniqueFd> over_v6 = util::ConnectTcp("::1", port, deadline);
  EXPECT_EQ(over_v6.ok(), v6) << over_v6.status();
  EXPECT_EQ(absl::StrContains((*any)->Describe(), "IPv4 only"), !v6) << (*any)->Describe();

  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> loopback6 = MetricsEndpoint::Start("[::1]:0", WebConfig{});
  if (v6) {
    EXPECT_TRUE(loopback6.ok()) << loopback6.status();
    return;
  }
  EXPECT_EQ(loopback6.status().code(), absl::StatusCode::kInvalidArgument) << loopback6.status();
  EXPECT_THAT(loopback6.status().message(), AllOf(HasSubstr("IPv6"), HasSubstr("0.0.0.0:PORT")));
}

// The metrics endpoint's TLS files are read bounded and checked, at start
// and at every reload: a reload runs on the handshake thread with the
// context's lock held, where OpenSSL's own file reads would block on a
// FIFO (every later handshake with it) or read /dev/zero without end.
TEST(TlsServerContext, AFifoOrDevZeroAsACertificateIsRefusedAtStartAndAtReload) {
  const std::string dir = test_util::MakeTempDir("roced-tlsctx");
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  TlsServerConfig c{test_util::CertPath("server.crt"), test_util::CertPath("server.key"),
                    test_util::CertPath("ca.crt"), ClientAuth::kRequireAndVerifyClientCert};
  for (const std::string& bad : {dir + "/fifo", std::string("/dev/zero"), dir}) {
    for (std::string TlsServerConfig::*field :
         {&TlsServerConfig::cert_file, &TlsServerConfig::key_file, &TlsServerConfig::client_ca_file}) {
      TlsServerConfig broken = c;
      broken.*field = bad;
      const absl::Time start = absl::Now();
      auto ctx = TlsServerContext::Create(broken);
      ASSERT_FALSE(ctx.ok()) << bad;
      EXPECT_THAT(ctx.status().message(), AllOf(HasSubstr("tls_server_config."), HasSubstr("PEM file " + bad + " is a "),
                                                HasSubstr("a regular file is required")));
      EXPECT_LT(absl::Now() - start, absl::Seconds(1));
    }
  }
  // Reload: the certificate renewed as a FIFO keeps the files loaded before.
  std::filesystem::copy_file(test_util::CertPath("server.crt"), dir + "/server.crt");
  c.cert_file = dir + "/server.crt";
  auto ctx = TlsServerContext::Create(c);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ssl(SSL_CTX_new(TLS_server_method()), &SSL_CTX_free);
  ASSERT_TRUE((*ctx)->Configure(ssl.get()));
  std::filesystem::remove(dir + "/server.crt");
  ASSERT_EQ(::mkfifo((dir + "/server.crt").c_str(), 0600), 0);
  // why: a reload check that changes nothing leaves no trace to wait on.
  absl::SleepFor(absl::FromChrono(kReloadCheckInterval) + absl::Milliseconds(100));  // why: see above
  const absl::Time start = absl::Now();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> again(SSL_CTX_new(TLS_server_method()), &SSL_CTX_free);
  EXPECT_TRUE((*ctx)->Configure(again.get()));  // the reload is tried here
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_NE(SSL_CTX_get0_certificate(again.get()), nullptr);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace roced::agent
