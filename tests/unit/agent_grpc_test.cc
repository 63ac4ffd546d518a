// The agent's gRPC and Prometheus endpoints against real servers on
// loopback and on a unix socket, backed by the fixture sysfs tree.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <thread>

#include "absl/strings/str_cat.h"
#include "google/protobuf/unknown_field_set.h"
#include "agent/core/agent.h"
#include "agent/core/describe.h"
#include "agent/core/event_bus.h"
#include "agent/api/health_service.h"
#include "agent/serve/server.h"
#include "fixture_daemon.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "roced/v1/agent.grpc.pb.h"
#include "roced/v1/peer.grpc.pb.h"

#include "test_util.h"

namespace roced::agent {
namespace {

using ::testing::HasSubstr;

class AgentServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = roced::test_util::MakeTempDir("roced-test");
    config_path_ = dir_ + "/roced.yaml";
    WriteConfig("apiVersion: roced/v1\nkind: NodeConfig\nmode: observe\n");
    DaemonOptions opts = FixtureDaemonOptions(dir_);
    opts.server.grpc_listen = "127.0.0.1:0";
    opts.server.insecure = true;
    opts.server.socket_path = dir_ + "/roced.sock";
    opts.server.metrics_listen = "127.0.0.1:0";
    node_ = std::make_unique<Daemon>(std::move(opts));
    agent_ = node_->agent();
    server_ = node_->server();
    ASSERT_TRUE(node_->Start().ok());
    ASSERT_GT(server_->grpc_port(), 0);
    ASSERT_GT(server_->metrics_port(), 0);
  }
  void TearDown() override {
    node_->Stop(absl::Seconds(1));
    std::filesystem::remove_all(dir_);
  }
  void WriteConfig(const std::string& text) {
    FILE* f = fopen(config_path_.c_str(), "w");
    fputs(text.c_str(), f);
    fclose(f);
  }
  std::string TcpTarget() const { return absl::StrCat("127.0.0.1:", server_->grpc_port()); }
  std::string UnixTarget() const { return "unix:" + dir_ + "/roced.sock"; }
  std::unique_ptr<roced::v1::Agent::Stub> Stub(const std::string& target) {
    return roced::v1::Agent::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  }
  static void Deadline(grpc::ClientContext* ctx, int seconds = 5) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  }
  // A WatchState stream held open (not read past its first event).
  struct HeldWatch {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<roced::v1::StateEvent>> reader;
  };
  // Opens `n` WatchState streams on `stub`, each read up to its first event
  // (so it is subscribed), into `watches`.
  static void HoldWatches(roced::v1::Agent::Stub* stub, size_t n, std::vector<std::unique_ptr<HeldWatch>>* watches) {
    for (size_t i = 0; i < n; ++i) {
      auto w = std::make_unique<HeldWatch>();
      Deadline(&w->ctx, 60);
      w->reader = stub->WatchState(&w->ctx, {});
      roced::v1::StateEvent ev;
      ASSERT_TRUE(w->reader->Read(&ev)) << "stream " << i;
      watches->push_back(std::move(w));
    }
  }

  std::string dir_;
  std::string config_path_;
  std::unique_ptr<Daemon> node_;
  Agent* agent_ = nullptr;
  Server* server_ = nullptr;
};

std::vector<std::string> DeviceNames(const roced::v1::NodeState& s) {
  std::vector<std::string> names;
  for (const auto& d : s.devices()) names.push_back(d.name());
  return names;
}

TEST_F(AgentServerTest, GetStateOverTcpListsFixtureDevicesWithGidTypes) {
  auto stub = Stub(TcpTarget());
  grpc::ClientContext ctx;
  Deadline(&ctx);
  roced::v1::NodeState state;
  ASSERT_TRUE(stub->GetState(&ctx, {}, &state).ok());
  EXPECT_THAT(DeviceNames(state), ::testing::IsSupersetOf({"mlx5_0", "mlx5_1", "mlx5_2", "rxe0"}));
  bool saw_v1 = false, saw_v2 = false;
  for (const auto& d : state.devices()) {
    for (const auto& p : d.ports()) {
      for (const auto& g : p.gids()) {
        saw_v1 |= g.type() == roced::v1::GID_TYPE_ROCE_V1;
        saw_v2 |= g.type() == roced::v1::GID_TYPE_ROCE_V2;
      }
    }
  }
  EXPECT_TRUE(saw_v1);
  EXPECT_TRUE(saw_v2);
  EXPECT_EQ(state.config().generation(), 1u);
  EXPECT_EQ(state.config().mode(), roced::v1::MODE_OBSERVE);
  EXPECT_FALSE(state.agent().version().empty());
}

TEST_F(AgentServerTest, GetStateOverUnixSocketMatchesTcp) {
  auto tcp = Stub(TcpTarget());
  auto unix_stub = Stub(UnixTarget());
  roced::v1::NodeState a, b;
  grpc::ClientContext c1, c2;
  Deadline(&c1);
  Deadline(&c2);
  ASSERT_TRUE(tcp->GetState(&c1, {}, &a).ok());
  ASSERT_TRUE(unix_stub->GetState(&c2, {}, &b).ok());
  EXPECT_EQ(DeviceNames(a), DeviceNames(b));
  EXPECT_EQ(std::filesystem::status(dir_ + "/roced.sock").type(), std::filesystem::file_type::socket);
}

TEST_F(AgentServerTest, DiagnoseFindsTheFixturesNarrowPcieSlotAndRejectsUnknownChecks) {
  auto stub = Stub(TcpTarget());
  grpc::ClientContext ctx;
  Deadline(&ctx);
  roced::v1::DiagnoseRequest req;
  req.add_checks("pcie");
  roced::v1::DiagnoseResponse resp;
  ASSERT_TRUE(stub->Diagnose(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.findings_size(), 1);  // mlx5_2 trained at x4 of x16
  EXPECT_EQ(resp.findings(0).check(), "pcie");
  EXPECT_EQ(resp.findings(0).severity(), roced::v1::SEVERITY_WARNING);
  EXPECT_THAT(resp.findings(0).object(), HasSubstr("mlx5_2"));
  EXPECT_THAT(resp.findings(0).summary(), HasSubstr("x4"));

  grpc::ClientContext ctx2;
  Deadline(&ctx2);
  req.add_checks("nonsense");
  grpc::Status s = stub->Diagnose(&ctx2, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("unknown check 'nonsense'"));
}

TEST_F(AgentServerTest, ProbeRpcsAreServedAndCheckTheirInput) {
  // Probes themselves are tested in probe_runtime_test and in the lab.
  auto stub = Stub(TcpTarget());
  {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    roced::v1::ProbeResult resp;
    EXPECT_EQ(stub->RunProbe(&ctx, {}, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  auto peer = roced::v1::ProbePeer::NewStub(
      grpc::CreateChannel(TcpTarget(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  Deadline(&ctx);
  roced::v1::OpenEndpointResponse resp;
  EXPECT_EQ(peer->OpenEndpoint(&ctx, {}, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// ProbePeer.Describe over gRPC: the node as GetState shows it, through
// DescribeNode (tested on its own in agent_parts_test); the fixture's mlx5
// ports have RoCE v2 GIDs of IPv4 addresses, and no switch is heard.
TEST_F(AgentServerTest, DescribeSaysWhoTheNodeIsFromItsState) {
  auto peer = roced::v1::ProbePeer::NewStub(
      grpc::CreateChannel(TcpTarget(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  Deadline(&ctx);
  roced::v1::DescribeResponse got;
  grpc::Status s = peer->Describe(&ctx, {}, &got);
  ASSERT_TRUE(s.ok()) << s.error_message();
  auto stub = Stub(TcpTarget());
  grpc::ClientContext ctx2;
  Deadline(&ctx2);
  roced::v1::NodeState state;
  ASSERT_TRUE(stub->GetState(&ctx2, {}, &state).ok());
  EXPECT_FALSE(got.node_name().empty());
  EXPECT_EQ(got.node_name(), state.hostname());
  EXPECT_EQ(got.version(), state.agent().version());
  EXPECT_GE(got.endpoints_size(), 1);
  EXPECT_EQ(got.SerializeAsString(), DescribeNode(state, {}).SerializeAsString());
  EXPECT_EQ(got.tor(), "");
}

TEST_F(AgentServerTest, ApplyConfigOverGrpcMapsValidationToInvalidArgument) {
  auto stub = Stub(UnixTarget());
  grpc::ClientContext ctx;
  Deadline(&ctx);
  roced::v1::ApplyConfigRequest req;
  req.mutable_config()->set_api_version("roced/v1");
  req.mutable_config()->set_kind("NodeConfig");
  req.mutable_config()->add_interfaces()->mutable_match()->set_netdev("eth0");
  req.mutable_config()->mutable_interfaces(0)->mutable_qos()->mutable_pfc()->add_priorities(9);
  roced::v1::ApplyConfigResponse resp;
  grpc::Status s = stub->ApplyConfig(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("interfaces[0].qos.pfc.priorities[0]: priority 9 is out of range; allowed 0-7"));
}

TEST_F(AgentServerTest, HealthServiceReportsServing) {
  // grpc.health.v1.Health/Check with an empty request; the response is
  // HealthCheckResponse{status: SERVING (1)}, i.e. bytes 08 01.
  auto channel = grpc::CreateChannel(TcpTarget(), grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  grpc::ClientContext ctx;
  Deadline(&ctx);
  grpc::ByteBuffer request;  // empty message
  grpc::Slice empty("");
  request = grpc::ByteBuffer(&empty, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                    [&done](grpc::Status s) { done.set_value(s); });
  grpc::Status s = done.get_future().get();
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));
}

// grpc.health.v1 as HealthService serves it, on a server of its own.
class HealthServiceTest : public ::testing::Test {
 protected:
  using Response = grpc::health::v1::HealthCheckResponse;
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&health_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = grpc::health::v1::Health::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    health_.Shutdown();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }
  grpc::Status Check(const std::string& service, Response* response) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    return stub_->Check(&ctx, request, response);
  }
  struct Watcher {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<Response>> reader;
  };
  std::unique_ptr<Watcher> Watch(const std::string& service) {
    auto w = std::make_unique<Watcher>();
    w->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    w->reader = stub_->Watch(&w->ctx, request);
    return w;
  }
  Response::ServingStatus Next(Watcher* w) {
    Response r;
    return w->reader->Read(&r) ? r.status() : Response::UNKNOWN;
  }

  HealthService health_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::health::v1::Health::Stub> stub_;
};

TEST_F(HealthServiceTest, CheckAnswersTheStatusAndNotFoundForAnUnknownService) {
  health_.SetServingStatus("", true);
  health_.SetServingStatus("roced.v1.Agent", false);
  Response r;
  ASSERT_TRUE(Check("", &r).ok());
  EXPECT_EQ(r.status(), Response::SERVING);
  ASSERT_TRUE(Check("roced.v1.Agent", &r).ok());
  EXPECT_EQ(r.status(), Response::NOT_SERVING);
  grpc::Status s = Check("no.such.Service", &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("no.such.Service"));
  s = Check(std::string(300, 'x'), &r);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("service: 300 bytes, at most 256"));
}

TEST_F(HealthServiceTest, WatchSendsTheStatusThenEachChangeAndEndsAtShutdown) {
  health_.SetServingStatus("roced.v1.Agent", true);
  auto w = Watch("roced.v1.Agent");
  EXPECT_EQ(Next(w.get()), Response::SERVING);
  health_.SetServingStatus("roced.v1.Agent", true);  // no change: nothing sent
  health_.SetServingStatus("roced.v1.Agent", false);
  EXPECT_EQ(Next(w.get()), Response::NOT_SERVING);
  health_.SetServingStatus("roced.v1.Agent", true);
  EXPECT_EQ(Next(w.get()), Response::SERVING);
  health_.Shutdown();
  EXPECT_EQ(Next(w.get()), Response::NOT_SERVING);
  EXPECT_EQ(Next(w.get()), Response::UNKNOWN);  // the stream ended
  EXPECT_EQ(w->reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(HealthServiceTest, WatchOfAServiceNotYetSetSaysServiceUnknownThenItsStatus) {
  auto w = Watch("roced.v1.ProbePeer");
  EXPECT_EQ(Next(w.get()), Response::SERVICE_UNKNOWN);
  health_.SetServingStatus("roced.v1.ProbePeer", true);
  EXPECT_EQ(Next(w.get()), Response::SERVING);
}

TEST_F(HealthServiceTest, WatchersAreBoundedAndACancelledOneFreesItsPlace) {
  health_.SetServingStatus("", true);
  std::vector<std::unique_ptr<Watcher>> open;
  for (int i = 0; i < HealthService::kMaxWatchers; ++i) {
    open.push_back(Watch(""));
    ASSERT_EQ(Next(open.back().get()), Response::SERVING) << "watcher " << i;
  }
  auto refused = Watch("");
  EXPECT_EQ(Next(refused.get()), Response::UNKNOWN);
  grpc::Status s = refused->reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("at most 8"));
  // The server sees the cancellation within its 1 s poll.
  open.front()->ctx.TryCancel();
  open.front()->reader->Finish();
  open.erase(open.begin());
  bool admitted = false;
  for (int i = 0; i < 50 && !admitted; ++i) {
    auto again = Watch("");
    admitted = Next(again.get()) == Response::SERVING;
    if (admitted) {
      open.push_back(std::move(again));
    } else {
      again->reader->Finish();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // poll: retried until admitted
    }
  }
  EXPECT_TRUE(admitted) << "a cancelled Watch kept its place";
  health_.Shutdown();
  for (auto& w : open) {
    while (Next(w.get()) != Response::UNKNOWN) {
    }
    w->reader->Finish();
  }
}

// Server reflection (what grpcurl and grpc_cli use to discover the API):
// grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo, a
// bidirectional stream, asked to list services. Debian ships no reflection
// client or .proto, so the messages are encoded by hand from their field
// numbers: request list_services (7, string) = "", response
// list_services_response (6) { repeated service (1) { name (1) } }.
// Off unless asked for (agent_auth_test checks that); --grpc-reflection
// turns it on.
TEST(AgentServerReflection, ServerReflectionListsTheServicesWhenEnabled) {
  Daemon fixture(FixtureDaemonOptions());
  Agent& agent = *fixture.agent();
  ServerOptions so;
  so.grpc_listen = "127.0.0.1:0";
  so.insecure = true;
  so.reflection = true;
  so.socket_path = "";
  so.metrics_listen = "";
  Server server({&agent, nullptr, nullptr, nullptr}, so);
  ASSERT_TRUE(server.Start().ok());
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server.grpc_port()), grpc::InsecureChannelCredentials());
  auto Deadline = [](grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  };
  grpc::GenericStub generic(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  Deadline(&ctx);
  auto call = generic.PrepareCall(&ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  auto step = [&cq](intptr_t want) {
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(reinterpret_cast<intptr_t>(tag), want);
    return ok;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(step(1));
  grpc::Slice list_services(std::string("\x3a\x00", 2));
  grpc::ByteBuffer request(&list_services, 1);
  call->Write(request, reinterpret_cast<void*>(2));
  ASSERT_TRUE(step(2));
  grpc::ByteBuffer response;
  call->Read(&response, reinterpret_cast<void*>(3));
  ASSERT_TRUE(step(3));
  call->WritesDone(reinterpret_cast<void*>(4));
  ASSERT_TRUE(step(4));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  ASSERT_TRUE(step(5));
  ASSERT_TRUE(status.ok()) << status.error_message();
  cq.Shutdown();

  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  google::protobuf::UnknownFieldSet top;
  ASSERT_TRUE(top.ParseFromString(bytes));
  std::vector<std::string> services;
  for (int i = 0; i < top.field_count(); ++i) {
    if (top.field(i).number() != 6) continue;
    google::protobuf::UnknownFieldSet list;
    ASSERT_TRUE(list.ParseFromString(top.field(i).length_delimited()));
    for (int j = 0; j < list.field_count(); ++j) {
      google::protobuf::UnknownFieldSet svc;
      ASSERT_TRUE(svc.ParseFromString(list.field(j).length_delimited()));
      ASSERT_GT(svc.field_count(), 0);
      services.push_back(svc.field(0).length_delimited());
    }
  }
  EXPECT_THAT(services, ::testing::IsSupersetOf({"roced.v1.Agent", "roced.v1.ProbePeer", "grpc.health.v1.Health"}));
  server.Shutdown(absl::ZeroDuration());
}

TEST_F(AgentServerTest, WatchStateSendsStateThenConfigEvents) {
  auto stub = Stub(TcpTarget());
  grpc::ClientContext ctx;
  Deadline(&ctx, 10);
  auto reader = stub->WatchState(&ctx, {});
  roced::v1::StateEvent ev;
  ASSERT_TRUE(reader->Read(&ev));
  ASSERT_TRUE(ev.has_state());
  EXPECT_FALSE(ev.state().devices().empty());
  // A rejected reload shows up as a config event with the error...
  WriteConfig("apiVersion: roced/v1\nkind: NodeConfig\nmode: sideways\n");
  EXPECT_FALSE(agent_->LoadConfig().ok());
  ASSERT_TRUE(reader->Read(&ev));
  ASSERT_TRUE(ev.has_config()) << ev.DebugString();
  EXPECT_FALSE(ev.config().accepted());
  EXPECT_THAT(ev.config().error(), HasSubstr("mode"));
  // ...and leaves the previous config in force.
  EXPECT_EQ(agent_->State().config().mode(), roced::v1::MODE_OBSERVE);
  EXPECT_EQ(agent_->State().config().generation(), 1u);
  WriteConfig("apiVersion: roced/v1\nkind: NodeConfig\nmode: enforce\n");
  ASSERT_TRUE(agent_->LoadConfig().ok());
  ASSERT_TRUE(reader->Read(&ev));
  ASSERT_TRUE(ev.has_config());
  EXPECT_TRUE(ev.config().accepted());
  EXPECT_EQ(ev.config().generation(), 2u);
  ctx.TryCancel();
}

TEST_F(AgentServerTest, MetricsEndpointServesDeviceAndHealthSeries) {
  std::string body = roced::test_util::HttpGet(server_->metrics_port(), "/metrics");
  ASSERT_FALSE(body.empty());
  EXPECT_THAT(body, HasSubstr("roced_build_info{"));
  EXPECT_THAT(body, HasSubstr("roced_device_info{device=\"mlx5_0\""));
  EXPECT_THAT(body, ::testing::ContainsRegex(
                        "roced_pcie_link_degraded\\{device=\"mlx5_2\",pci_address=\"0000:af:00.0\"\\} 1"));
  EXPECT_THAT(body, ::testing::ContainsRegex(
                        "roced_pcie_link_degraded\\{device=\"mlx5_0\",[^}]*\\} 0"));
  EXPECT_THAT(body, ::testing::ContainsRegex(
                        "roced_port_state\\{device=\"mlx5_0\",port=\"1\",netdev=\"ens1f0\",state=\"active\"\\} 1"));
  EXPECT_THAT(body, HasSubstr("roced_discovery_runs_total{result=\"success\"}"));
  EXPECT_THAT(body, HasSubstr("roced_component_healthy{component=\"grpc\"} 1"));
  EXPECT_THAT(body, HasSubstr("roced_config_generation 1"));
}

TEST(AgentServerStartup, SecondServerOnTheSamePortFailsWithAddress) {
  Daemon fixture(FixtureDaemonOptions());
  Agent& agent = *fixture.agent();
  ServerOptions s1;
  s1.grpc_listen = "127.0.0.1:0";
  s1.insecure = true;
  s1.socket_path = "";
  s1.metrics_listen = "";
  Server first({&agent, nullptr, nullptr, nullptr}, s1);
  ASSERT_TRUE(first.Start().ok());
  ServerOptions s2 = s1;
  s2.grpc_listen = absl::StrCat("127.0.0.1:", first.grpc_port());
  Server second({&agent, nullptr, nullptr, nullptr}, s2);
  absl::Status st = second.Start();
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr(s2.grpc_listen));
  first.Shutdown(absl::ZeroDuration());
}

TEST(CivetListenAddress, WildcardIpv6ListensOnEverything) {
  EXPECT_EQ(CivetListenAddress("[::]:9471"), "+9471");
  EXPECT_EQ(CivetListenAddress("0.0.0.0:9471"), "9471");
  EXPECT_EQ(CivetListenAddress("127.0.0.1:9471"), "127.0.0.1:9471");
}

// The bounds on what callers may send (agent/serve/server.h, agent/core/event_bus.h,
// model/config_limits.h), over a real server.

roced::v1::ApplyConfigRequest EmptyInterfaces(int n) {
  roced::v1::ApplyConfigRequest req;
  req.set_dry_run(true);
  req.mutable_config()->set_api_version("roced/v1");
  req.mutable_config()->set_kind("NodeConfig");
  for (int i = 0; i < n; ++i) req.mutable_config()->add_interfaces();
  return req;
}

TEST_F(AgentServerTest, ApplyConfigOverTheMessageCapIsRefusedNamingTheCapAndChangesNothing) {
  auto stub = Stub(TcpTarget());
  roced::v1::ApplyConfigRequest req = EmptyInterfaces(1000000);
  ASSERT_GT(req.ByteSizeLong(), static_cast<size_t>(kMaxReceiveMessageBytes));
  grpc::ClientContext ctx;
  Deadline(&ctx, 30);
  roced::v1::ApplyConfigResponse resp;
  grpc::Status s = stub->ApplyConfig(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("1048576"));
  EXPECT_EQ(agent_->State().config().generation(), 1u);
  // The agent answers as before.
  grpc::ClientContext c2;
  Deadline(&c2);
  roced::v1::NodeState state;
  EXPECT_TRUE(stub->GetState(&c2, {}, &state).ok());
}

TEST_F(AgentServerTest, ApplyConfigUnderTheMessageCapOverTheInterfaceCapIsRefusedNamingTheCap) {
  auto stub = Stub(UnixTarget());
  roced::v1::ApplyConfigRequest req = EmptyInterfaces(100000);
  ASSERT_LT(req.ByteSizeLong(), static_cast<size_t>(kMaxReceiveMessageBytes));
  req.set_dry_run(false);
  grpc::ClientContext ctx;
  Deadline(&ctx, 30);
  roced::v1::ApplyConfigResponse resp;
  grpc::Status s = stub->ApplyConfig(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "config rejected: interfaces: has 100000 entries; allowed at most 256 (RoCE ports of one node)");
  EXPECT_EQ(agent_->State().config().generation(), 1u);
  EXPECT_EQ(agent_->State().config().mode(), roced::v1::MODE_OBSERVE);
}

TEST_F(AgentServerTest, ApplyConfigRefusesOpenEnumsAndNonNormalizedDurations) {
  auto stub = Stub(UnixTarget());
  roced::v1::ApplyConfigRequest req = EmptyInterfaces(0);
  req.mutable_config()->set_mode(static_cast<roced::v1::Mode>(77));
  grpc::ClientContext c1;
  Deadline(&c1);
  roced::v1::ApplyConfigResponse resp;
  grpc::Status s = stub->ApplyConfig(&c1, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("mode: unknown value 77; allowed: enforce, observe (or unset)"));

  req = EmptyInterfaces(0);
  req.mutable_confirm_timeout()->set_seconds(60);
  req.mutable_confirm_timeout()->set_nanos(-5);
  grpc::ClientContext c2;
  Deadline(&c2);
  s = stub->ApplyConfig(&c2, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("confirm_timeout: seconds 60 and nanos -5 is not a normalized duration"));
  EXPECT_EQ(agent_->State().config().generation(), 1u);
}

TEST_F(AgentServerTest, NamesCallersSendAreBoundedAndQuotedEscaped) {
  auto stub = Stub(UnixTarget());
  roced::v1::DiagnoseRequest dreq;
  dreq.add_checks(std::string(5000, 'c'));
  grpc::ClientContext c1;
  Deadline(&c1);
  roced::v1::DiagnoseResponse dresp;
  grpc::Status s = stub->Diagnose(&c1, dreq, &dresp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "checks[0]: 5000 bytes long; allowed at most 64");
  dreq.Clear();
  for (int i = 0; i < 1000; ++i) dreq.add_checks("pfc");
  grpc::ClientContext c2;
  Deadline(&c2);
  s = stub->Diagnose(&c2, dreq, &dresp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("checks: 1000 names; allowed at most"));
  roced::v1::GetCountersRequest creq;
  creq.set_netdev("eth0\nERR");
  grpc::ClientContext c3;
  Deadline(&c3);
  roced::v1::GetCountersResponse cresp;
  s = stub->GetCounters(&c3, creq, &cresp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "netdev: 'eth0\\nERR' has a control character");
}

// The cap is the agent's, over both servers; on the unix socket, since one
// TCP identity has at most kMaxCallsPerIdentity (32) calls in flight.
TEST_F(AgentServerTest, WatchStateBeyondTheSubscriberCapIsRefusedWhileGetStateAnswers) {
  auto stub = Stub(UnixTarget());
  std::vector<std::unique_ptr<HeldWatch>> watches;
  ASSERT_NO_FATAL_FAILURE(HoldWatches(stub.get(), EventBus::kMaxSubscribers, &watches));
  {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    auto reader = stub->WatchState(&ctx, {});
    roced::v1::StateEvent ev;
    EXPECT_FALSE(reader->Read(&ev));
    grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(s.error_message(), "too many WatchState streams: at most 64 may be open at once");
  }
  grpc::ClientContext get;
  Deadline(&get);
  roced::v1::NodeState state;
  EXPECT_TRUE(stub->GetState(&get, {}, &state).ok());
  EXPECT_FALSE(state.devices().empty());
  // A stream that ends frees its place.
  watches.back()->ctx.TryCancel();
  watches.back()->reader->Finish();
  watches.pop_back();
  bool watched = false;
  for (int attempt = 0; attempt < 40 && !watched; ++attempt) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    auto reader = stub->WatchState(&ctx, {});
    roced::v1::StateEvent ev;
    watched = reader->Read(&ev);
    ctx.TryCancel();
    reader->Finish();
    if (!watched) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // poll: retried until watched
  }
  EXPECT_TRUE(watched);
  for (auto& w : watches) w->ctx.TryCancel();
  for (auto& w : watches) w->reader->Finish();
}

bool GrpcComponentHealthy(roced::v1::Agent::Stub* stub, std::string* message) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  roced::v1::NodeState state;
  if (!stub->GetState(&ctx, {}, &state).ok()) return false;
  for (const auto& c : state.agent().components()) {
    if (c.name() == "grpc") {
      *message = c.message();
      return c.healthy();
    }
  }
  return false;
}

// One TCP caller holding its 32 calls (streams it does not end) is refused
// the 33rd, naming the limit, before any handler work; the unix socket
// answers meanwhile; the "grpc" component says why until a call ends.
TEST_F(AgentServerTest, OneTcpIdentityPast32CallsInFlightIsRefusedAndReported) {
  auto stub = Stub(TcpTarget());
  auto unix_stub = Stub(UnixTarget());
  std::vector<std::unique_ptr<HeldWatch>> watches;
  ASSERT_NO_FATAL_FAILURE(HoldWatches(stub.get(), kMaxCallsPerIdentity, &watches));
  grpc::ClientContext get;
  Deadline(&get);
  roced::v1::NodeState state;
  grpc::Status refused = stub->GetState(&get, {}, &state);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("too many calls in flight from insecure ipv4:127.0.0.1: at most 32 at once per caller"));
  std::string message;
  EXPECT_FALSE(GrpcComponentHealthy(unix_stub.get(), &message));  // over the socket: answered
  EXPECT_THAT(message, HasSubstr("refusing calls: too many calls in flight from insecure ipv4:127.0.0.1"));
  watches.back()->ctx.TryCancel();
  watches.back()->reader->Finish();
  watches.pop_back();
  bool healthy = false;
  for (int attempt = 0; attempt < 50 && !healthy; ++attempt) {
    healthy = GrpcComponentHealthy(unix_stub.get(), &message);
    if (!healthy) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // poll: retried until healthy
  }
  EXPECT_TRUE(healthy) << message;
  for (auto& w : watches) w->ctx.TryCancel();
  for (auto& w : watches) w->reader->Finish();
}

}  // namespace
}  // namespace roced::agent
