#include "agent/grpc_peer_client.h"

#include "roced/v1/agent.grpc.pb.h"
#include "roced/v1/peer.grpc.pb.h"

namespace roced::agent {

namespace {

void SetDeadline(grpc::ClientContext* ctx, absl::Time deadline) {
  ctx->set_deadline(absl::ToChronoTime(deadline));
}

// absl and gRPC status codes share their numbering.
absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace

std::shared_ptr<grpc::Channel> GrpcPeerClient::Channel(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = channels_.find(address);
  if (it != channels_.end()) return it->second;
  if (channels_.size() >= 64) channels_.clear();
  grpc::ChannelArguments args;
  // A peer that comes back is probed again within seconds, not after
  // gRPC's default reconnect backoff of up to two minutes. (The minimum is
  // left alone: gRPC also uses it as the connect timeout, and a slow
  // handshake must not fail before open_timeout.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  channels_[address] = channel;
  return channel;
}

absl::StatusOr<roced::v1::OpenEndpointResponse> GrpcPeerClient::OpenEndpoint(
    const std::string& address, const roced::v1::OpenEndpointRequest& request,
    absl::Time deadline) {
  auto stub = roced::v1::ProbePeer::NewStub(Channel(address));
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  roced::v1::OpenEndpointResponse response;
  if (grpc::Status s = stub->OpenEndpoint(&ctx, request, &response); !s.ok()) return FromGrpc(s);
  return response;
}

absl::StatusOr<roced::v1::CloseEndpointResponse> GrpcPeerClient::CloseEndpoint(
    const std::string& address, const roced::v1::CloseEndpointRequest& request,
    absl::Time deadline) {
  auto stub = roced::v1::ProbePeer::NewStub(Channel(address));
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  roced::v1::CloseEndpointResponse response;
  if (grpc::Status s = stub->CloseEndpoint(&ctx, request, &response); !s.ok()) return FromGrpc(s);
  return response;
}

absl::StatusOr<roced::v1::GetCountersResponse> GrpcPeerClient::GetCounters(
    const std::string& address, const roced::v1::GetCountersRequest& request,
    absl::Time deadline) {
  auto stub = roced::v1::Agent::NewStub(Channel(address));
  grpc::ClientContext ctx;
  SetDeadline(&ctx, deadline);
  roced::v1::GetCountersResponse response;
  if (grpc::Status s = stub->GetCounters(&ctx, request, &response); !s.ok()) return FromGrpc(s);
  return response;
}

}  // namespace roced::agent
