// Who may call what, over a real server on loopback with certificates
// made by openssl at test time: mutual TLS on TCP (no certificate, another
// CA's, an expired one: refused at the handshake), every method of both services as every role,
// the unix socket's credentials, agent-to-agent probe set-up over mutual
// TLS, the audit trail and the identity in config events. The roles' own
// logic is tested in access_test.
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "absl/strings/str_cat.h"
#include "access/grpc_tls.h"
#include "access/roles.h"
#include "agent/serve/server.h"
#include "fixture_daemon.h"
#include "fake_probe_for_test.h"
#include "prometheus/text_serializer.h"
#include "roced/v1/agent.grpc.pb.h"
#include "roced/v1/peer.grpc.pb.h"
#include "test_certs.h"
#include "test_util.h"

namespace roced::agent {
namespace {

using ::testing::HasSubstr;
using test_util::CertPath;
using test_util::ClientFiles;

constexpr char kPolicy[] = R"(apiVersion: roced/v1
kind: AccessPolicy
identities:
  - {match: admin.test, roles: [admin]}
  - {match: "spiffe://roced.test/*", roles: [admin]}
  - {match: operator.test, roles: [operator]}
  - {match: viewer.test, roles: [viewer]}
  - {match: peer.test, roles: [peer]}
  - {match: node.test, roles: [peer]}
)";

access::AccessPolicy Policy(const std::string& text = kPolicy) {
  auto p = access::ParseAccessPolicy(text);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : access::AccessPolicy();
}

// An agent on the fixture tree serving mutual TLS on loopback, with a fake
// RDMA engine, its socket and audit log in a temporary directory.
class TlsNode {
 public:
  explicit TlsNode(const std::string& config = "", access::AccessPolicy policy = Policy(),
                   ProbeRuntimeOptions probes = {}, access::TlsFiles tls = {}) {
    dir_ = test_util::MakeTempDir("roced-auth");
    std::ofstream(dir_ + "/roced.yaml") << "apiVersion: roced/v1\nkind: NodeConfig\nmode: observe\n" << config;
    DaemonOptions opts = FixtureDaemonOptions(dir_);
    opts.agent.reconcile = false;
    ServerOptions& s = opts.server;
    s.grpc_listen = "127.0.0.1:0";
    s.tls = tls.any() ? tls : access::TlsFiles{CertPath("server.crt"), CertPath("server.key"), CertPath("ca.crt")};
    s.tls_reload_interval_seconds = 1;
    s.policy = std::move(policy);
    s.socket_path = dir_ + "/roced.sock";
    s.audit_log = dir_ + "/audit.log";
    probes.factory = &factory_;
    probes.schedule = false;
    // The default: a TLS handshake with a node just started took over 500 ms
    // on a machine running the lab beside the tests. Refused or unreachable
    // peers fail at once (no wait_for_ready), so no test waits it out.
    probes.open_timeout = absl::Seconds(5);
    opts.probes = std::move(probes);
    node_ = std::make_unique<Daemon>(std::move(opts));
    start_ = node_->Start();
  }
  ~TlsNode() {
    node_->Stop(absl::Seconds(1));
    std::filesystem::remove_all(dir_);
  }

  const absl::Status& started() const { return start_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", node_->server()->grpc_port()); }
  std::shared_ptr<grpc::Channel> As(const std::string& who) const {
    return grpc::CreateChannel(address(), access::ClientTlsCredentials(ClientFiles(who)));
  }
  std::shared_ptr<grpc::Channel> WithoutCertificate() const {
    return grpc::CreateChannel(address(), access::ClientTlsCredentials({"", "", CertPath("ca.crt")}));
  }
  std::shared_ptr<grpc::Channel> Unix() const {
    return grpc::CreateChannel("unix:" + dir_ + "/roced.sock", grpc::InsecureChannelCredentials());
  }
  std::string AuditLog(const std::string& name = "audit.log") const {
    std::ifstream in(dir_ + "/" + name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string Metrics() const {
    return prometheus::TextSerializer().Serialize(node_->agent()->registry()->Collect());
  }
  Agent* agent() const { return node_->agent(); }
  probe::FakeEndpointBehaviour behaviour;

 private:
  probe::FakeEndpointFactoryForTest factory_{&behaviour};
  std::string dir_;
  std::unique_ptr<Daemon> node_;
  absl::Status start_;
};

void Deadline(grpc::ClientContext* ctx, int ms = 5000) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
}

// A unary call of `method` with `request` (serialized), as gRPC's generic
// stub makes it: any method by name.
grpc::Status Call(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                  const google::protobuf::Message& request) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  Deadline(&ctx);
  std::string bytes = request.SerializeAsString();
  grpc::Slice slice(bytes);
  grpc::ByteBuffer in(&slice, 1), out;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &in, &out, [&](grpc::Status s) { done.set_value(s); });
  return done.get_future().get();
}

// WatchState: OK once the first event (the state) arrives, else the
// stream's status.
grpc::Status Watch(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = roced::v1::Agent::NewStub(channel);
  grpc::ClientContext ctx;
  Deadline(&ctx, 3000);
  auto reader = stub->WatchState(&ctx, roced::v1::WatchStateRequest());
  roced::v1::StateEvent ev;
  if (reader->Read(&ev)) {
    ctx.TryCancel();
    reader->Finish();
    return grpc::Status::OK;
  }
  return reader->Finish();
}

// Each method's request in the matrix: empty, except RunProbe (to the
// configured peer, so an operator may).
grpc::Status CallMethod(const std::shared_ptr<grpc::Channel>& channel, const std::string& method) {
  if (method == "/roced.v1.Agent/WatchState") return Watch(channel);
  if (method == "/roced.v1.Agent/RunProbe") {
    roced::v1::RunProbeRequest r;
    r.set_peer("node2");
    return Call(channel, method, r);
  }
  return Call(channel, method, roced::v1::GetStateRequest());  // an empty message
}

std::string PeersConfig(const std::string& address) {
  return absl::StrCat("probes:\n  peers:\n    - name: node2\n      address: \"", address, "\"\n");
}

TEST(Auth, EveryMethodOfBothServicesAnswersEachRoleAsTheTableSays) {
  TlsNode node(PeersConfig("127.0.0.1:1"));
  ASSERT_TRUE(node.started().ok()) << node.started();
  const std::pair<std::string, access::RoleSet> callers[] = {
      {"admin", access::RoleSet::Of({access::Role::kAdmin})},
      {"uri", access::RoleSet::Of({access::Role::kAdmin})},  // by its URI SAN alone
      {"operator", access::RoleSet::Of({access::Role::kOperator})},
      {"viewer", access::RoleSet::Of({access::Role::kViewer})},
      {"peer", access::RoleSet::Of({access::Role::kPeer})},
  };
  for (const auto& [who, roles] : callers) {
    auto channel = node.As(who);
    for (const access::MethodRule& rule : access::MethodRules()) {
      const std::string method(rule.full_name);
      grpc::Status s = CallMethod(channel, method);
      if (roles.Has(rule.needs)) {
        EXPECT_NE(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << who << " " << method << ": " << s.error_message();
        EXPECT_NE(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << who << " " << method;
      } else {
        EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << who << " " << method;
        EXPECT_THAT(s.error_message(), HasSubstr(absl::StrCat(method, " needs the ",
                                                              access::RoleName(rule.needs), " role")));
      }
    }
  }
}

// No certificate, another CA's or an expired one: the handshake fails, so
// no stream of such a client takes a server thread (answered
// UNAUTHENTICATED by the gate instead, each call would hold one, and such
// clients could stall them all).
TEST(Auth, NoCertificateAnotherCasOrAnExpiredOneFailTheHandshake) {
  TlsNode node;
  ASSERT_TRUE(node.started().ok()) << node.started();
  for (const access::MethodRule& rule : access::MethodRules()) {
    grpc::Status s = CallMethod(node.WithoutCertificate(), std::string(rule.full_name));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << rule.full_name << ": " << s.error_message();
  }
  for (const std::string who : {"other", "expired"}) {
    // Straight through gRPC: rocectl's own checks would stop an expired
    // certificate before it is sent.
    access::TlsFiles files = ClientFiles(who);
    auto channel = grpc::CreateChannel(node.address(), access::ClientTlsCredentials(files));
    grpc::Status s = Call(channel, "/roced.v1.Agent/GetState", roced::v1::GetStateRequest());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << who << ": " << s.error_message();
  }
  // ... and nothing of theirs reached a handler: only the control call is
  // counted.
  EXPECT_TRUE(Call(node.As("viewer"), "/roced.v1.Agent/GetState", roced::v1::GetStateRequest()).ok());
  EXPECT_THAT(node.Metrics(), HasSubstr("roced_api_requests_total{code=\"OK\",method=\"roced.v1.Agent/GetState\",role=\"viewer\"} 1"));
  EXPECT_THAT(node.Metrics(), ::testing::Not(HasSubstr("UNAUTHENTICATED")));
}

// Renewed files are taken without a restart: the client CA bundle is
// replaced by another CA's, and within the reload interval that CA's
// clients are let in and the old one's are not.
TEST(Auth, ReplacedCertificateFilesAreUsedWithoutARestart) {
  const std::string dir = test_util::MakeTempDir("roced-reload");
  std::filesystem::copy_file(CertPath("ca.crt"), dir + "/client-ca.crt");
  TlsNode node("", Policy("apiVersion: roced/v1\nkind: AccessPolicy\nidentities:\n  - {match: \"*\", roles: [viewer]}\n"),
               {}, {CertPath("server.crt"), CertPath("server.key"), dir + "/client-ca.crt"});
  ASSERT_TRUE(node.started().ok()) << node.started();
  auto state = [&](const std::string& who) {
    // A new channel each time: the check happens at the handshake.
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);
    auto channel = grpc::CreateCustomChannel(node.address(), access::ClientTlsCredentials(ClientFiles(who)), args);
    return Call(channel, "/roced.v1.Agent/GetState", roced::v1::GetStateRequest()).error_code();
  };
  ASSERT_EQ(state("viewer"), grpc::StatusCode::OK);
  ASSERT_EQ(state("other"), grpc::StatusCode::UNAVAILABLE);
  // Replaced the way renewals are written: a new file renamed over the old.
  std::filesystem::copy_file(CertPath("other-ca.crt"), dir + "/client-ca.crt.new");
  std::filesystem::rename(dir + "/client-ca.crt.new", dir + "/client-ca.crt");
  const absl::Time end = absl::Now() + absl::Seconds(20);
  while (state("other") != grpc::StatusCode::OK && absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(200));  // poll: the loop's condition
  }
  EXPECT_EQ(state("other"), grpc::StatusCode::OK);
  EXPECT_EQ(state("viewer"), grpc::StatusCode::UNAVAILABLE);
  std::filesystem::remove_all(dir);
}

TEST(Auth, ReflectionIsOffByDefault) {
  TlsNode node;
  ASSERT_TRUE(node.started().ok());
  grpc::Status s = Call(node.As("admin"), "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                        roced::v1::GetStateRequest());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED) << s.error_message();
}

TEST(Auth, AppliesCarryTheCallerIntoEventsStateAuditAndMetrics) {
  TlsNode node;
  ASSERT_TRUE(node.started().ok());
  auto admin = roced::v1::Agent::NewStub(node.As("admin"));
  grpc::ClientContext wctx;
  Deadline(&wctx);
  roced::v1::WatchStateRequest wr;
  wr.set_skip_initial_state(true);
  auto events = admin->WatchState(&wctx, wr);
  absl::SleepFor(absl::Milliseconds(200));  // why: with skip_initial_state no message marks the subscription
  roced::v1::ApplyConfigRequest req;
  req.mutable_config()->set_api_version("roced/v1");
  req.mutable_config()->set_kind("NodeConfig");
  req.mutable_config()->set_mode(roced::v1::MODE_OBSERVE);
  req.mutable_config()->mutable_probes()->set_max_concurrent(3);  // differs from the file's
  {
    auto viewer = roced::v1::Agent::NewStub(node.As("viewer"));
    grpc::ClientContext ctx;
    Deadline(&ctx);
    roced::v1::ApplyConfigResponse resp;
    EXPECT_EQ(viewer->ApplyConfig(&ctx, req, &resp).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  grpc::ClientContext ctx;
  Deadline(&ctx);
  roced::v1::ApplyConfigResponse resp;
  ASSERT_TRUE(admin->ApplyConfig(&ctx, req, &resp).ok());
  roced::v1::StateEvent ev;
  bool seen = false;
  while (!seen && events->Read(&ev)) seen = ev.has_config() && ev.config().accepted();
  ASSERT_TRUE(seen);
  EXPECT_EQ(ev.config().identity(), "admin.test");
  EXPECT_EQ(node.agent()->State().config().applied_by(), "admin.test");
  wctx.TryCancel();
  const std::string audit = node.AuditLog();
  EXPECT_THAT(audit, HasSubstr(absl::StrCat("\"identity\":\"admin.test\",\"transport\":\"tls\",\"roles\":\"admin\","
                                            "\"method\":\"/roced.v1.Agent/ApplyConfig\",\"code\":\"OK\",\"generation\":",
                                            resp.generation())));
  // Refusals are kept apart from the changes (refusals.log).
  EXPECT_THAT(audit, ::testing::Not(HasSubstr("PERMISSION_DENIED")));
  EXPECT_THAT(node.AuditLog("refusals.log"),
              HasSubstr("\"identity\":\"viewer.test\",\"transport\":\"tls\",\"roles\":\"viewer\","
                        "\"method\":\"/roced.v1.Agent/ApplyConfig\",\"code\":\"PERMISSION_DENIED\""));
  // Reads are counted, not audited.
  EXPECT_THAT(audit, ::testing::Not(HasSubstr("WatchState")));
  EXPECT_THAT(node.Metrics(), HasSubstr("roced_api_requests_total{code=\"PERMISSION_DENIED\",method=\"roced.v1.Agent/"
                                        "ApplyConfig\",role=\"viewer\"} 1"));
  EXPECT_THAT(node.Metrics(),
              HasSubstr("roced_api_refusals_total{code=\"PERMISSION_DENIED\",method=\"roced.v1.Agent/ApplyConfig\"} 1"));
}

TEST(Auth, AnOperatorProbesConfiguredPeersOnlyAndAnAdminAnyAddress) {
  TlsNode node(PeersConfig("127.0.0.1:1"));
  ASSERT_TRUE(node.started().ok());
  roced::v1::RunProbeRequest adhoc;
  adhoc.set_peer("127.0.0.1:2");
  grpc::Status s = Call(node.As("operator"), "/roced.v1.Agent/RunProbe", adhoc);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("which is not a peer of the config, needs the admin role"));
  // By name or by its address, the configured peer is the operator's.
  roced::v1::RunProbeRequest by_address;
  by_address.set_peer("127.0.0.1:1");
  EXPECT_TRUE(Call(node.As("operator"), "/roced.v1.Agent/RunProbe", by_address).ok());
  EXPECT_TRUE(Call(node.As("admin"), "/roced.v1.Agent/RunProbe", adhoc).ok());
  EXPECT_THAT(node.AuditLog(), HasSubstr("\"code\":\"PERMISSION_DENIED\",\"message\":\"/roced.v1.Agent/RunProbe to"));
}

TEST(Auth, AgentsSetUpProbesOverMutualTlsWithThePeerRole) {
  TlsNode responder;
  ASSERT_TRUE(responder.started().ok());
  ProbeRuntimeOptions po;
  po.peer_credentials = access::ClientTlsCredentials({CertPath("server.crt"), CertPath("server.key"), CertPath("ca.crt")});
  TlsNode initiator(PeersConfig(responder.address()), Policy(), po);
  ASSERT_TRUE(initiator.started().ok());
  roced::v1::RunProbeRequest req;
  req.set_peer("node2");
  req.set_iterations(10);
  auto stub = roced::v1::Agent::NewStub(initiator.As("operator"));
  grpc::ClientContext ctx;
  Deadline(&ctx, 20000);
  roced::v1::ProbeResult r;
  ASSERT_TRUE(stub->RunProbe(&ctx, req, &r).ok());
  EXPECT_TRUE(r.success()) << r.failure_reason() << ": " << r.failure_detail();
  EXPECT_EQ(responder.behaviour.created.load(), 1);
  EXPECT_THAT(responder.AuditLog(), HasSubstr("\"identity\":\"localhost\",\"transport\":\"tls\",\"roles\":\"peer\","
                                              "\"method\":\"/roced.v1.ProbePeer/OpenEndpoint\",\"code\":\"OK\""));

  // A responder whose policy does not make the initiator a peer refuses it.
  TlsNode strict("", Policy("apiVersion: roced/v1\nkind: AccessPolicy\nidentities:\n  - {match: admin.test, roles: [admin]}\n"));
  ASSERT_TRUE(strict.started().ok());
  TlsNode initiator2(PeersConfig(strict.address()), Policy(), po);
  ASSERT_TRUE(initiator2.started().ok());
  grpc::ClientContext ctx2;
  Deadline(&ctx2, 20000);
  ASSERT_TRUE(roced::v1::Agent::NewStub(initiator2.As("admin"))->RunProbe(&ctx2, req, &r).ok());
  EXPECT_FALSE(r.success());
  EXPECT_THAT(r.failure_detail(), HasSubstr("needs the peer role"));
  EXPECT_EQ(strict.behaviour.created.load(), 0);
}

TEST(Auth, UnixSocketCallersGetTheRolesOfTheirCredentials) {
  // The test runs as root: the socket's group role applies.
  ASSERT_EQ(geteuid(), 0u) << "run as root (CI does)";
  {
    TlsNode node;
    ASSERT_TRUE(node.started().ok());
    grpc::Status s = Call(node.Unix(), "/roced.v1.Agent/ConfirmConfig", roced::v1::ConfirmConfigRequest());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();  // admin: reached
    EXPECT_THAT(node.AuditLog(), HasSubstr("\"identity\":\"unix uid 0 gid 0 pid "));
  }
  TlsNode viewer_socket("", Policy("apiVersion: roced/v1\nkind: AccessPolicy\nsocket:\n  group_roles: [viewer]\n"));
  ASSERT_TRUE(viewer_socket.started().ok());
  EXPECT_TRUE(Call(viewer_socket.Unix(), "/roced.v1.Agent/GetState", roced::v1::GetStateRequest()).ok());
  grpc::Status s = Call(viewer_socket.Unix(), "/roced.v1.Agent/ConfirmConfig", roced::v1::ConfirmConfigRequest());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("needs the admin role; unix uid 0 gid 0 pid"));
}

TEST(Gate, UnixRolesFollowRootTheGroupAndSupplementaryGroups) {
  GateOptions o;
  o.policy.socket_group = access::RoleSet::Of({access::Role::kAdmin});
  o.policy.socket_other = access::RoleSet::Of({access::Role::kViewer});
  o.socket_group = 998;
  Gate gate(o, nullptr, nullptr, nullptr);
  EXPECT_TRUE(gate.RolesOf({0, 0, 1, {}}).Has(access::Role::kAdmin));
  EXPECT_TRUE(gate.RolesOf({1000, 998, 1, {}}).Has(access::Role::kAdmin));
  EXPECT_TRUE(gate.RolesOf({1000, 1000, 1, {4, 998}}).Has(access::Role::kAdmin));
  EXPECT_EQ(gate.RolesOf({1000, 1000, 1, {4}}), access::RoleSet::Of({access::Role::kViewer}));
}

ServerOptions Tcp(const std::string& listen) {
  ServerOptions s;
  s.grpc_listen = listen;
  s.socket_path = "";
  s.metrics_listen = "";
  return s;
}

absl::Status StartWith(const ServerOptions& s) {
  Daemon fixture(FixtureDaemonOptions());
  Agent& agent = *fixture.agent();
  Server server({&agent, nullptr, nullptr, nullptr}, s);
  absl::Status st = server.Start();
  server.Shutdown(absl::ZeroDuration());
  return st;
}

TEST(ServerSecurity, TcpNeedsTlsOrInsecureAndInsecureStaysOnLoopback) {
  EXPECT_THAT(std::string(StartWith(Tcp("127.0.0.1:0")).message()),
              HasSubstr("needs --tls-cert, --tls-key and --tls-client-ca (mutual TLS), or --insecure"));
  ServerOptions remote = Tcp("0.0.0.0:0");
  remote.insecure = true;
  EXPECT_THAT(std::string(StartWith(remote).message()), HasSubstr("needs --insecure-allow-remote as well"));
  remote.insecure_allow_remote = true;
  EXPECT_TRUE(StartWith(remote).ok());
  ServerOptions both = Tcp("127.0.0.1:0");
  both.insecure = true;
  both.tls = ClientFiles("admin");
  EXPECT_THAT(std::string(StartWith(both).message()), HasSubstr("exclude each other"));
  ServerOptions expired = Tcp("127.0.0.1:0");
  expired.tls = ClientFiles("expired");
  EXPECT_THAT(std::string(StartWith(expired).message()), HasSubstr("--tls-cert " + CertPath("expired.crt") + ": certificate"));
  EXPECT_TRUE(IsLoopbackListen("[::1]:7471"));
  EXPECT_TRUE(IsLoopbackListen("127.0.0.2:7471"));
  EXPECT_FALSE(IsLoopbackListen("[::]:7471"));
  EXPECT_FALSE(IsLoopbackListen("10.0.0.1:7471"));
}

}  // namespace
}  // namespace roced::agent
