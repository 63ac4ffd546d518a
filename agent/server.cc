#include "agent/server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "util/fs.h"
#include "util/log.h"

namespace roced::agent {
namespace {
int ToMs(absl::Duration d) { return static_cast<int>(absl::ToInt64Milliseconds(d)); }
}  // namespace

std::string CivetListenAddress(const std::string& listen) {
  if (absl::StartsWith(listen, "[::]:")) return absl::StrCat("+", listen.substr(5));
  if (absl::StartsWith(listen, "0.0.0.0:")) return listen.substr(8);
  return listen;
}

Server::Server(ServedParts parts, ServerOptions options)
    : agent_(parts.agent),
      counters_(parts.counters),
      probes_(parts.probes),
      registry_(std::move(parts.registry)),
      options_(std::move(options)),
      agent_service_(parts.agent) {
  agent_service_.set_counters(counters_);
  agent_service_.set_probes(probes_);
  peer_service_.set_runtime(probes_);
}

Server::~Server() { Shutdown(absl::ZeroDuration()); }

void ApplyServerLimits(grpc::ServerBuilder* builder) {
  builder->SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  grpc::ResourceQuota quota("roced");
  quota.SetMaxThreads(kMaxServerThreads);
  builder->SetResourceQuota(quota);
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxConcurrentStreamsPerConnection);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, ToMs(kKeepaliveTime));
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ToMs(kKeepaliveTimeout));
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                              ToMs(kMinClientPingInterval));
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, kMaxPingStrikes);
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, ToMs(kMaxConnectionIdle));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, ToMs(kMaxConnectionAge));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, ToMs(kMaxConnectionAgeGrace));
}

absl::Status Server::Start() {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which would let a second roced bind
  // the same port and split the traffic; a busy port must be an error.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  ApplyServerLimits(&builder);
  if (!options_.grpc_listen.empty()) {
    builder.AddListeningPort(options_.grpc_listen, grpc::InsecureServerCredentials(), &grpc_port_);
  }
  if (!options_.socket_path.empty()) {
    std::filesystem::path dir = std::filesystem::path(options_.socket_path).parent_path();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create socket directory ", dir.string(), ": ", ec.message()));
    }
    ::unlink(options_.socket_path.c_str());
    builder.AddListeningPort("unix:" + options_.socket_path, grpc::InsecureServerCredentials());
  }
  builder.RegisterService(&agent_service_);
  builder.RegisterService(&peer_service_);
  grpc_ = builder.BuildAndStart();
  if (grpc_ == nullptr || (!options_.grpc_listen.empty() && grpc_port_ == 0)) {
    grpc_.reset();
    return absl::UnavailableError(absl::StrCat(
        "cannot listen for gRPC on ", options_.grpc_listen.empty() ? "" : options_.grpc_listen,
        options_.socket_path.empty() ? "" : " / unix:" + options_.socket_path,
        " (address in use or not available?)"));
  }
  if (!options_.socket_path.empty()) {
    // Group-accessible, so operators in the socket's group can use rocectl
    // without root.
    ::chmod(options_.socket_path.c_str(), 0660);
  }
  grpc::HealthCheckServiceInterface* health = grpc_->GetHealthCheckService();
  if (health != nullptr) {
    health->SetServingStatus(true);
    health->SetServingStatus("roced.v1.Agent", true);
    health->SetServingStatus("roced.v1.ProbePeer", true);
  }
  agent_->SetComponentHealth("grpc", true,
                             absl::StrCat("listening on port ", grpc_port_,
                                          options_.socket_path.empty() ? "" : " and " + options_.socket_path));

  if (!options_.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint = MetricsEndpoint::Start(
        CivetListenAddress(options_.metrics_listen), options_.metrics_web_config);
    if (!endpoint.ok()) {
      grpc_->Shutdown();
      grpc_.reset();
      return absl::Status(endpoint.status().code(),
                          absl::StrCat("metrics endpoint on ", options_.metrics_listen, ": ",
                                       endpoint.status().message()));
    }
    exposer_ = *std::move(endpoint);
    collector_ = std::make_shared<metrics::NodeCollector>([this] { return agent_->State(); });
    exposer_->RegisterCollectable(collector_);
    if (counters_ != nullptr) {
      for (const auto& c : counters_->Collectables()) exposer_->RegisterCollectable(c);
    }
    if (registry_ != nullptr) exposer_->RegisterCollectable(registry_);
    auto ports = exposer_->GetListeningPorts();
    metrics_port_ = ports.empty() ? 0 : ports.front();
    agent_->SetComponentHealth("metrics", true, absl::StrCat("listening on port ", metrics_port_,
                                                              " (", exposer_->Describe(), ")"));
  }
  return absl::OkStatus();
}

void Server::Shutdown(absl::Duration grace) {
  agent_service_.Shutdown();
  // Running probes end (cancelled) and responder endpoints are released
  // first, so RunProbe calls in flight do not hold up the gRPC shutdown.
  if (probes_) probes_->Stop();
  if (grpc_) {
    grpc_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(grace));
    grpc_->Wait();
    grpc_.reset();
    if (!options_.socket_path.empty()) ::unlink(options_.socket_path.c_str());
  }
  exposer_.reset();
}

}  // namespace roced::agent
