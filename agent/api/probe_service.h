// gRPC front end of roced.v1.ProbePeer (agent-to-agent probe set-up): thin
// handlers over ProbeRuntime. Before a runtime is set every RPC answers
// UNAVAILABLE.
#pragma once

#include "agent/runtimes/counters_runtime.h"
#include "agent/api/gate.h"
#include "agent/runtimes/lldp_runtime.h"
#include "agent/runtimes/probe_runtime.h"
#include "roced/v1/peer.grpc.pb.h"

namespace roced::agent {

class MeshRuntime;

class ProbePeerService final : public roced::v1::ProbePeer::Service {
 public:
  // Must outlive serving.
  explicit ProbePeerService(Gate* gate) : gate_(gate) {}
  // Set before serving; must outlive serving.
  void set_runtime(ProbeRuntime* runtime) { runtime_ = runtime; }
  void set_counters(CountersRuntime* counters) { counters_ = counters; }
  // Describe answers from the agent's state and the LLDP neighbours (null:
  // no LLDP listener, the ToR is not known).
  void set_agent(Agent* agent) { agent_ = agent; }
  void set_lldp(LldpRuntime* lldp) { lldp_ = lldp; }
  // Describe's UD QPN and Q_Key (null: the mesh is off, they stay 0).
  void set_mesh(MeshRuntime* mesh) { mesh_ = mesh; }

  grpc::Status OpenEndpoint(grpc::ServerContext* context,
                            const roced::v1::OpenEndpointRequest* request,
                            roced::v1::OpenEndpointResponse* response) override;
  grpc::Status CloseEndpoint(grpc::ServerContext* context,
                             const roced::v1::CloseEndpointRequest* request,
                             roced::v1::CloseEndpointResponse* response) override;
  grpc::Status GetCounters(grpc::ServerContext* context, const roced::v1::GetCountersRequest* request,
                           roced::v1::GetCountersResponse* response) override;
  grpc::Status Describe(grpc::ServerContext* context, const roced::v1::DescribeRequest* request,
                        roced::v1::DescribeResponse* response) override;

 private:
  Gate* gate_;
  ProbeRuntime* runtime_ = nullptr;
  CountersRuntime* counters_ = nullptr;
  Agent* agent_ = nullptr;
  LldpRuntime* lldp_ = nullptr;
  MeshRuntime* mesh_ = nullptr;
};

}  // namespace roced::agent
