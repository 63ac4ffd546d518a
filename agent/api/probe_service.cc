// ProbePeer handlers: what one agent asks of another for probes and the mesh.
#include "agent/api/probe_service.h"

#include "absl/strings/str_cat.h"
#include "agent/api/agent_service.h"
#include "agent/core/agent.h"
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

}  // namespace roced::agent
