// The responding side of probes: the endpoints this node holds for peer
// agents' initiators (ProbePeer.OpenEndpoint / CloseEndpoint). Any number
// of initiators at once, up to `max_endpoints`; each endpoint has a lease
// and is released by the reaper pass if its initiator vanishes without
// closing it. A latency endpoint is served (its writes answered) by a
// thread of its own from open to release.
//
// Ownership: the registry owns its endpoints and their serving threads; it
// does not own the factory or the local port function, which must outlive
// it.
//
// Threads: every method is thread-safe. ReapExpired is meant for one
// periodic caller (the agent's lease thread, every second); Shutdown for
// the owner when it stops. The registry's mutex is a leaf: nothing else is
// locked while it is held, and endpoints are released outside it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "probe/endpoint.h"
#include "probe/params.h"
#include "roced/v1/peer.pb.h"

namespace roced::probe {

// What the responder holds for others at most. Peers are other agents,
// but one of them (or a stolen peer certificate) must not take everything:
// a per-caller share, and a cap on the memory pinned by registrations
// (2 x size per endpoint, its send and receive halves), kept below the
// agent's memory limit (the DaemonSet's 256 MiB; pinned pages count
// against it, hugepage-backed ones against the hugetlb pool instead).
struct ResponderLimits {
  size_t max_endpoints = 32;
  // Endpoints one caller (its authenticated identity) may hold at once.
  size_t max_per_caller = 8;
  uint64_t max_pinned_bytes = 128ull << 20;
  // A latency endpoint nothing lands in for this long is released then,
  // not at the end of its lease (up to 150 s): its initiator is gone.
  absl::Duration serve_idle = absl::Seconds(10);
};

class ResponderRegistry {
 public:
  // `factory` null: every open is FAILED_PRECONDITION (no RDMA engine).
  // `local_port` is asked at each open.
  ResponderRegistry(EndpointFactory* factory, LocalPortFn local_port, ResponderLimits limits);
  ResponderRegistry(EndpointFactory* factory, LocalPortFn local_port, size_t max_endpoints)
      : ResponderRegistry(factory, std::move(local_port), ResponderLimits{max_endpoints}) {}
  // Shutdown().
  ~ResponderRegistry();
  ResponderRegistry(const ResponderRegistry&) = delete;
  ResponderRegistry& operator=(const ResponderRegistry&) = delete;

  // Creates an endpoint connected to the request's queue pairs, leased for
  // its lease_seconds (clamped; 0: the default). INVALID_ARGUMENT for a bad
  // request or queue pairs the endpoint cannot connect to,
  // RESOURCE_EXHAUSTED at the limit ("N probe endpoints open; the limit is
  // M"), at `caller`'s share, at the pinned-bytes cap, or when the device is
  // out of resources; FAILED_PRECONDITION without a usable RDMA port,
  // UNAVAILABLE after Shutdown. `caller` is who asks (the authenticated
  // identity, not the request's self-declared initiator name).
  absl::StatusOr<roced::v1::OpenEndpointResponse> Open(const roced::v1::OpenEndpointRequest& request,
                                                       const std::string& caller = "")
      ABSL_LOCKS_EXCLUDED(mu_);

  // Releases the endpoint. NOT_FOUND for an unknown (closed, or expired) id.
  absl::Status Close(const std::string& endpoint_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Releases every endpoint whose lease ended at or before `now`, and every
  // one whose serving stopped on an error.
  void ReapExpired(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // Releases every endpoint; opens answer UNAVAILABLE from now on.
  // Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Responder;
  absl::StatusOr<std::unique_ptr<Endpoint>> CreateConnected(
      const roced::v1::OpenEndpointRequest& request) const;
  // RESOURCE_EXHAUSTED when one more endpoint for `caller` pinning
  // `pinned` bytes would pass a limit, naming it.
  absl::Status AtLimit(const std::string& caller, uint64_t pinned) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void Release(const std::shared_ptr<Responder>& responder);

  EndpointFactory* const factory_;
  const LocalPortFn local_port_;
  const ResponderLimits limits_;

  mutable std::mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::shared_ptr<Responder>> responders_ ABSL_GUARDED_BY(mu_);
};

}  // namespace roced::probe
