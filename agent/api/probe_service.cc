// ProbePeer handlers, and the probe RPCs of AgentService (declared in
// agent_service.h, kept here with the rest of the probe front end).
#include "agent/api/probe_service.h"

#include "absl/strings/str_cat.h"
#include "agent/core/agent.h"
#include "agent/api/agent_service.h"
#include "agent/core/describe.h"
#include "agent/runtimes/mesh_runtime.h"
#include "roced/v1/state.pb.h"
#include "util/escape.h"

namespace roced::agent {

namespace {
constexpr char kOpenEndpoint[] = "/roced.v1.ProbePeer/OpenEndpoint";
constexpr char kCloseEndpoint[] = "/roced.v1.ProbePeer/CloseEndpoint";
constexpr char kPeerGetCounters[] = "/roced.v1.ProbePeer/GetCounters";
constexpr char kDescribe[] = "/roced.v1.ProbePeer/Describe";
constexpr char kRunProbe[] = "/roced.v1.Agent/RunProbe";
constexpr char kListProbeResults[] = "/roced.v1.Agent/ListProbeResults";
constexpr char kListMeshResults[] = "/roced.v1.Agent/ListMeshResults";

grpc::Status NotReady() { return grpc::Status(grpc::StatusCode::UNAVAILABLE, "probes not ready"); }
}  // namespace

grpc::Status ProbePeerService::OpenEndpoint(grpc::ServerContext* context,
                                            const roced::v1::OpenEndpointRequest* request,
                                            roced::v1::OpenEndpointResponse* response) {
  return gate_->Serve(context, kOpenEndpoint, [&](const Caller& caller, AuditNote* note) {
    note->summary = absl::StrCat(roced::v1::ProbeKind_Name(request->kind()), " from initiator ",
                                 util::Quoted(request->initiator()), ", ", request->initiator_qps_size(),
                                 " QP(s), ", request->size(), " bytes");
    if (runtime_ == nullptr) return NotReady();
    absl::StatusOr<roced::v1::OpenEndpointResponse> opened = runtime_->OpenEndpoint(*request, caller.identity);
    if (!opened.ok()) return ToGrpc(opened.status());
    *response = *std::move(opened);
    absl::StrAppend(&note->summary, ": endpoint ", response->endpoint_id());
    return grpc::Status::OK;
  });
}

grpc::Status ProbePeerService::CloseEndpoint(grpc::ServerContext* context,
                                             const roced::v1::CloseEndpointRequest* request,
                                             roced::v1::CloseEndpointResponse*) {
  return gate_->Serve(context, kCloseEndpoint, [&](const Caller&, AuditNote*) {
    if (runtime_ == nullptr) return NotReady();
    return ToGrpc(runtime_->CloseEndpoint(request->endpoint_id()));
  });
}

grpc::Status ProbePeerService::GetCounters(grpc::ServerContext* context,
                                           const roced::v1::GetCountersRequest* request,
                                           roced::v1::GetCountersResponse* response) {
  return gate_->Serve(context, kPeerGetCounters,
                      [&](const Caller&, AuditNote*) { return ReadCounters(counters_, *request, response); });
}

grpc::Status ProbePeerService::Describe(grpc::ServerContext* context, const roced::v1::DescribeRequest*,
                                        roced::v1::DescribeResponse* response) {
  return gate_->Serve(context, kDescribe, [&](const Caller&, AuditNote*) {
    if (agent_ == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent not ready");
    std::vector<roced::v1::LldpNeighbor> neighbors;
    if (lldp_ != nullptr) neighbors = lldp_->Neighbors();
    *response = DescribeNode(agent_->State(), neighbors);
    if (mesh_ != nullptr) mesh_->AddResponder(response);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::RunProbe(grpc::ServerContext* context, const roced::v1::RunProbeRequest* request,
                                    roced::v1::ProbeResult* response) {
  return gate_->Serve(context, kRunProbe, [&](const Caller& caller, AuditNote* note) {
    note->summary = absl::StrCat(roced::v1::ProbeKind_Name(request->kind()), " to ",
                                 util::Quoted(request->peer()));
    if (probes_ == nullptr) return NotReady();
    // An operator probes the peers the config names; any other address is
    // traffic the agent would send anywhere, which needs admin.
    if (!caller.roles.Has(access::Role::kAdmin) && !probes_->IsConfiguredPeer(request->peer())) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat("/roced.v1.Agent/RunProbe to ", util::Quoted(request->peer()),
                                       ", which is not a peer of the config, needs the admin role; ",
                                       util::EscapeForLog(caller.identity, 128), " has ",
                                       caller.roles.ToString()));
    }
    absl::StatusOr<roced::v1::ProbeResult> result = probes_->RunProbe(*request);
    if (!result.ok()) return ToGrpc(result.status());
    *response = *std::move(result);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::ListProbeResults(grpc::ServerContext* context,
                                            const roced::v1::ListProbeResultsRequest* request,
                                            roced::v1::ListProbeResultsResponse* response) {
  return gate_->Serve(context, kListProbeResults, [&](const Caller&, AuditNote*) {
    if (probes_ == nullptr) return NotReady();
    for (auto& r : probes_->ListResults(*request)) *response->add_results() = std::move(r);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::ListMeshResults(grpc::ServerContext* context,
                                           const roced::v1::ListMeshResultsRequest* request,
                                           roced::v1::ListMeshResultsResponse* response) {
  return gate_->Serve(context, kListMeshResults, [&](const Caller&, AuditNote*) {
    if (mesh_ == nullptr) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "the mesh is off: start roced with --mesh-inventory FILE or --mesh-dns NAME:PORT");
    }
    absl::StatusOr<roced::v1::ListMeshResultsResponse> list = mesh_->List(*request);
    if (!list.ok()) return ToGrpc(list.status());
    *response = *std::move(list);
    return grpc::Status::OK;
  });
}

}  // namespace roced::agent
