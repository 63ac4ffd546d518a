// The initiator's seam to the peer agent: the calls a probe makes to the
// agent at the other end (its ProbePeer service for the responder endpoint,
// its Agent.GetCounters for the counter deltas). The agent implements it
// over gRPC (agent/runtimes/grpc_peer_client.h); tests substitute a fake.
//
// Every call returns within `deadline` (the peer down, unreachable or
// silent: UNAVAILABLE or DEADLINE_EXCEEDED). Errors carry the peer's status
// code and its message as it gave it; the initiator adds which call failed.
//
// Threads: implementations must be thread-safe; probes call from several
// threads at once.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/peer.pb.h"

namespace roced::probe {

class PeerClient {
 public:
  virtual ~PeerClient() = default;

  // ProbePeer.OpenEndpoint at `address` (host:port).
  virtual absl::StatusOr<roced::v1::OpenEndpointResponse> OpenEndpoint(
      const std::string& address, const roced::v1::OpenEndpointRequest& request,
      absl::Time deadline) = 0;

  // ProbePeer.CloseEndpoint at `address`.
  virtual absl::StatusOr<roced::v1::CloseEndpointResponse> CloseEndpoint(
      const std::string& address, const roced::v1::CloseEndpointRequest& request,
      absl::Time deadline) = 0;

  // Agent.GetCounters at `address`.
  virtual absl::StatusOr<roced::v1::GetCountersResponse> GetCounters(
      const std::string& address, const roced::v1::GetCountersRequest& request,
      absl::Time deadline) = 0;
};

}  // namespace roced::probe
