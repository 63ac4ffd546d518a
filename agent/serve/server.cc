#include "agent/serve/server.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include "access/grpc_tls.h"

#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "model/readiness.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/status_macros.h"

namespace roced::agent {
namespace {
int ToMs(absl::Duration d) { return static_cast<int>(absl::ToInt64Milliseconds(d)); }

// Loads gRPC's reflection library, whose static initializer registers the
// reflection service for every server built after it (once per process).
absl::Status EnableReflection() {
  static const absl::Status* loaded = [] {
    if (dlopen(ROCED_GRPC_REFLECTION_LIB, RTLD_NOW | RTLD_GLOBAL) != nullptr) return new absl::Status();
    return new absl::Status(absl::UnavailableError(
        absl::StrCat("--grpc-reflection: cannot load ", ROCED_GRPC_REFLECTION_LIB, ": ", dlerror())));
  }();
  return *loaded;
}
}  // namespace

bool IsLoopbackListen(const std::string& listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) host = host.substr(1, host.size() - 2);
  return absl::StartsWith(host, "127.") || host == "::1" || host == "localhost";
}

std::string CivetListenAddress(const std::string& listen) {
  if (absl::StartsWith(listen, "[::]:")) return absl::StrCat("+", listen.substr(5));
  if (absl::StartsWith(listen, "0.0.0.0:")) return listen.substr(8);
  return listen;
}

Server::Server(ServedParts parts, ServerOptions options)
    : agent_(parts.agent),
      counters_(parts.counters),
      probes_(parts.probes),
      lldp_(parts.lldp),
      registry_(std::move(parts.registry)),
      options_(std::move(options)),
      audit_(options_.audit_log),
      gate_(GateOptions{options_.policy, options_.insecure, 0}, &unix_peers_, &audit_, registry_.get()),
      agent_service_(parts.agent, &gate_),
      peer_service_(&gate_) {
  agent_service_.set_counters(counters_);
  agent_service_.set_probes(probes_);
  agent_service_.set_lldp(lldp_);
  peer_service_.set_runtime(probes_);
  peer_service_.set_counters(counters_);
  peer_service_.set_agent(agent_);
  peer_service_.set_lldp(lldp_);
  agent_service_.set_mesh(parts.mesh);
  agent_service_.set_confirm(parts.confirm);
  peer_service_.set_mesh(parts.mesh);
}

Server::~Server() { Shutdown(absl::ZeroDuration()); }

void ApplyServerLimits(grpc::ServerBuilder* builder, int max_threads) {
  builder->SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  grpc::ResourceQuota quota(absl::StrCat("roced-", max_threads, "-threads"));
  quota.SetMaxThreads(max_threads);
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

absl::Status Server::CheckTcpSecurity() const {
  const std::string& listen = options_.grpc_listen;
  if (options_.insecure && options_.tls.any()) {
    return absl::InvalidArgumentError("--insecure and --tls-cert/--tls-key/--tls-client-ca exclude each other");
  }
  if (options_.insecure) {
    if (!IsLoopbackListen(listen) && !options_.insecure_allow_remote) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--insecure serves plaintext without authentication, so only on loopback (127.0.0.1:PORT, "
          "[::1]:PORT); --grpc-listen ", listen, " needs --insecure-allow-remote as well"));
    }
    return absl::OkStatus();
  }
  if (!options_.tls.any()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gRPC on TCP (--grpc-listen ", listen,
        ") needs --tls-cert, --tls-key and --tls-client-ca (mutual TLS), or --insecure (plaintext, loopback "
        "only); --grpc-listen '' serves the unix socket alone"));
  }
  return access::CheckTlsFiles(options_.tls, {"--tls-cert", "--tls-key", "--tls-client-ca"},
                               /*need_identity=*/true, absl::Now());
}

absl::Status Server::Preflight() const {
  if (!options_.grpc_listen.empty()) RETURN_IF_ERROR(CheckTcpSecurity());
  if (!options_.socket_path.empty() && !options_.socket_group.empty()) {
    RETURN_IF_ERROR(LookUpGroup(options_.socket_group).status());
  }
  if (options_.reflection) RETURN_IF_ERROR(EnableReflection());
  if (!options_.metrics_listen.empty()) {
    if (absl::Status s = MetricsEndpoint::CheckListenAddress(CivetListenAddress(options_.metrics_listen)); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("--metrics-listen ", options_.metrics_listen, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status Server::Start() {
  RETURN_IF_ERROR(Preflight());
  RETURN_IF_ERROR(StartGrpc());
  if (options_.insecure && !options_.grpc_listen.empty()) {
    const std::string warning = absl::StrCat(
        "gRPC on ", options_.grpc_listen, " is plaintext and unauthenticated (--insecure): every caller there is ",
        options_.policy.insecure.ToString());
    LOG_WARNING << warning;
    agent_->AddWarning(warning);
  }
  absl::Status metrics = StartMetrics();
  if (!metrics.ok()) Shutdown(absl::ZeroDuration());
  return metrics;
}

std::string Server::Listening() const {
  return absl::StrCat(
      options_.grpc_listen.empty() || tcp_ == nullptr
          ? "no TCP listener"
          : absl::StrCat("listening on port ", grpc_port_, options_.insecure ? " (plaintext" : " (mutual TLS",
                         ", at most ", tcp_->max_connections(), " connections, ", tcp_->max_per_address(),
                         " from one address)"),
      options_.socket_path.empty() ? "" : " and " + options_.socket_path);
}

void Server::SetGrpcProblem(GrpcProblem source, bool ok, const std::string& why) {
  std::lock_guard<std::mutex> lock(grpc_health_mu_);
  grpc_problems_[static_cast<size_t>(source)] = ok ? "" : why;
  std::string problems;
  for (const std::string& p : grpc_problems_) {
    if (!p.empty()) absl::StrAppend(&problems, problems.empty() ? "" : "; ", p);
  }
  agent_->SetComponentHealth("grpc", problems.empty(),
                             problems.empty() ? listening_ : absl::StrCat(problems, "; ", listening_));
}

absl::Status Server::StartGrpc() {
  if (options_.reflection) RETURN_IF_ERROR(EnableReflection());
  limits_ = std::make_unique<CallLimits>(options_.call_limits, [this](bool healthy, const std::string& why) {
    SetGrpcProblem(GrpcProblem::kCallLimits, healthy, why);
  });
  gate_.set_call_limits(limits_.get());
  if (!options_.grpc_listen.empty()) RETURN_IF_ERROR(StartTcp());
  if (absl::Status unix = StartUnix(); !unix.ok()) {
    if (grpc_) {
      grpc_->Shutdown();
      grpc_->Wait();
      grpc_.reset();
    }
    tcp_.reset();
    return unix;
  }
  for (const char* service : {"", "roced.v1.Agent", "roced.v1.ProbePeer"}) {
    health_.SetServingStatus(service, true);
    unix_health_.SetServingStatus(service, true);
  }
  {
    std::lock_guard<std::mutex> lock(grpc_health_mu_);
    listening_ = Listening();
  }
  SetGrpcProblem(GrpcProblem::kCallLimits, true, "");
  if (tcp_) tcp_->Serve(tcp_acceptor_.get());
  return absl::OkStatus();
}

absl::Status Server::StartTcp() {
  // roced accepts TCP itself (agent/serve/tcp_listener.h says why); gRPC
  // runs the credentials on each connection handed over.
  tcp_ = std::make_unique<TcpListener>(TcpListenerOptions{
      options_.grpc_listen, 0, 0,
      [this](bool ok, const std::string& why) { SetGrpcProblem(GrpcProblem::kListener, ok, why); }});
  RETURN_IF_ERROR(tcp_->Bind());
  grpc_port_ = tcp_->port();
  grpc::ServerBuilder builder;
  ApplyServerLimits(&builder, kMaxServerThreads);
  // A connection holds its place under the listener's caps until gRPC
  // closes it: one that never completes its handshake goes after this.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, ToMs(kTcpHandshakeTimeout));
  tcp_acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
      options_.insecure ? grpc::InsecureServerCredentials()
                        : access::ServerTlsCredentials(options_.tls, options_.tls_reload_interval_seconds));
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(limits_->Factory(/*tcp=*/true));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(&agent_service_);
  builder.RegisterService(&peer_service_);
  builder.RegisterService(&health_);
  grpc_ = builder.BuildAndStart();
  if (grpc_ == nullptr) {
    tcp_.reset();
    return absl::UnavailableError(absl::StrCat("cannot start the gRPC server for ", options_.grpc_listen));
  }
  return absl::OkStatus();
}

absl::Status Server::StartUnix() {
  if (options_.socket_path.empty()) return absl::OkStatus();
  UnixListenerOptions uo{options_.socket_path, static_cast<gid_t>(-1), !options_.policy.socket_other.empty(),
                         &unix_peers_};
  if (!options_.socket_group.empty()) {
    ASSIGN_OR_RETURN(uo.group, LookUpGroup(options_.socket_group));
    gate_.set_socket_group(uo.group);
  }
  unix_ = std::make_unique<UnixListener>(uo);
  RETURN_IF_ERROR(unix_->Bind());
  // A server of its own (no listening port: the listener hands it the
  // connections), with its own threads.
  grpc::ServerBuilder builder;
  ApplyServerLimits(&builder, kMaxUnixServerThreads);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(limits_->Factory(/*tcp=*/false));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(&agent_service_);
  builder.RegisterService(&peer_service_);
  builder.RegisterService(&unix_health_);
  unix_grpc_ = builder.BuildAndStart();
  if (unix_grpc_ == nullptr) {
    unix_.reset();
    return absl::UnavailableError(absl::StrCat("cannot start the gRPC server for ", options_.socket_path));
  }
  unix_->Serve(unix_grpc_.get());
  return absl::OkStatus();
}

absl::Status Server::StartMetrics() {
  if (options_.metrics_listen.empty()) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
      MetricsEndpoint::Start(CivetListenAddress(options_.metrics_listen), options_.metrics_web_config);
  if (!endpoint.ok()) {
    return absl::Status(endpoint.status().code(), absl::StrCat("--metrics-listen ", options_.metrics_listen, ": ",
                                                               endpoint.status().message()));
  }
  metrics_endpoint_ = *std::move(endpoint);
  metrics_endpoint_->ServeReadiness([this] { return model::ReadinessOf(agent_->State(), absl::Now()); });
  collector_ = std::make_shared<metrics::NodeCollector>([this] { return agent_->State(); });
  metrics_endpoint_->RegisterCollectable(collector_);
  if (counters_ != nullptr) {
    for (const auto& c : counters_->Collectables()) metrics_endpoint_->RegisterCollectable(c);
  }
  if (lldp_ != nullptr) {
    for (const auto& c : lldp_->Collectables()) metrics_endpoint_->RegisterCollectable(c);
  }
  if (registry_ != nullptr) metrics_endpoint_->RegisterCollectable(registry_);
  auto ports = metrics_endpoint_->GetListeningPorts();
  metrics_port_ = ports.empty() ? 0 : ports.front();
  agent_->SetComponentHealth("metrics", true,
                             absl::StrCat("listening on port ", metrics_port_, " (", metrics_endpoint_->Describe(), ")"));
  return absl::OkStatus();
}

void Server::Shutdown(absl::Duration grace) {
  agent_service_.Shutdown();
  health_.Shutdown();
  unix_health_.Shutdown();
  // No new local connections while gRPC winds down.
  if (unix_) unix_->Stop();
  if (tcp_) tcp_->Stop();
  // Running probes end (cancelled) and responder endpoints are released
  // first, so RunProbe calls in flight do not hold up the gRPC shutdown.
  if (probes_) probes_->Stop();
  const auto deadline = std::chrono::system_clock::now() + absl::ToChronoNanoseconds(grace);
  for (std::unique_ptr<grpc::Server>* server : {&grpc_, &unix_grpc_}) {
    if (*server == nullptr) continue;
    (*server)->Shutdown(deadline);
    (*server)->Wait();
    server->reset();
  }
  unix_.reset();
  tcp_.reset();
  // After both servers: no interceptor is left to tell the limits anything.
  gate_.set_call_limits(nullptr);
  limits_.reset();
  metrics_endpoint_.reset();
}

}  // namespace roced::agent
