// gRPC front ends: roced.v1.Agent and roced.v1.ProbePeer. Handlers are thin:
// each runs inside Gate::Serve (who calls, may they, the record of it),
// checks input, calls the Agent, maps the status.
#pragma once

#include <atomic>

#include "agent/core/agent.h"
#include "agent/runtimes/counters_runtime.h"
#include "agent/runtimes/lldp_runtime.h"
#include "agent/api/gate.h"
#include "agent/api/probe_service.h"
#include "roced/v1/agent.grpc.pb.h"
#include "roced/v1/peer.grpc.pb.h"

namespace roced::agent {

class MeshRuntime;
class ConfirmGuard;

class AgentService final : public roced::v1::Agent::Service {
 public:
  // Both must outlive serving.
  AgentService(Agent* agent, Gate* gate) : agent_(agent), gate_(gate) {}

  // Makes open WatchState streams end (called before server shutdown).
  void Shutdown() { shutting_down_.store(true); }
  // Where GetCounters reads from; set before serving, must outlive serving.
  void set_counters(CountersRuntime* counters) { counters_ = counters; }
  // Where RunProbe, ListProbeResults and GetState's probe summaries come
  // from; set before serving, must outlive serving.
  void set_probes(ProbeRuntime* probes) { probes_ = probes; }
  void set_lldp(LldpRuntime* lldp) { lldp_ = lldp; }
  // Where ListMeshResults reads from (null: the mesh is off).
  void set_mesh(MeshRuntime* mesh) { mesh_ = mesh; }
  // Takes the baseline of an ApplyConfig with a confirm policy (null: such
  // applies are refused, FAILED_PRECONDITION).
  void set_confirm(ConfirmGuard* confirm) { confirm_ = confirm; }

  grpc::Status GetState(grpc::ServerContext* context, const roced::v1::GetStateRequest* request,
                        roced::v1::NodeState* response) override;
  grpc::Status WatchState(grpc::ServerContext* context,
                          const roced::v1::WatchStateRequest* request,
                          grpc::ServerWriter<roced::v1::StateEvent>* writer) override;
  grpc::Status GetCounters(grpc::ServerContext* context,
                           const roced::v1::GetCountersRequest* request,
                           roced::v1::GetCountersResponse* response) override;
  grpc::Status ApplyConfig(grpc::ServerContext* context,
                           const roced::v1::ApplyConfigRequest* request,
                           roced::v1::ApplyConfigResponse* response) override;
  grpc::Status ConfirmConfig(grpc::ServerContext* context,
                             const roced::v1::ConfirmConfigRequest* request,
                             roced::v1::ConfirmConfigResponse* response) override;
  grpc::Status RollbackConfig(grpc::ServerContext* context,
                              const roced::v1::RollbackConfigRequest* request,
                              roced::v1::RollbackConfigResponse* response) override;
  // RunProbe and ListProbeResults are defined in probe_service.cc.
  grpc::Status RunProbe(grpc::ServerContext* context, const roced::v1::RunProbeRequest* request,
                        roced::v1::ProbeResult* response) override;
  grpc::Status ListProbeResults(grpc::ServerContext* context,
                                const roced::v1::ListProbeResultsRequest* request,
                                roced::v1::ListProbeResultsResponse* response) override;
  // What the mesh's probes saw (probe_service.cc); FAILED_PRECONDITION
  // when the mesh is off.
  grpc::Status ListMeshResults(grpc::ServerContext* context, const roced::v1::ListMeshResultsRequest* request,
                               roced::v1::ListMeshResultsResponse* response) override;
  // The checks of lib/diagnose over the agent's inputs and the probe
  // summaries; INVALID_ARGUMENT for an unknown check name.
  grpc::Status Diagnose(grpc::ServerContext* context, const roced::v1::DiagnoseRequest* request,
                        roced::v1::DiagnoseResponse* response) override;

 private:
  // An ApplyConfig's confirm policy validated, and its baseline taken.
  absl::StatusOr<roced::v1::ConfirmBaseline> TakeBaseline(const roced::v1::ConfirmPolicy& policy) const;
  grpc::Status Watch(grpc::ServerContext* context, const Caller& caller,
                     const roced::v1::WatchStateRequest& request,
                     grpc::ServerWriter<roced::v1::StateEvent>* writer);
  grpc::Status RunDiagnose(const roced::v1::DiagnoseRequest& request, roced::v1::DiagnoseResponse* response);

  Agent* agent_;
  Gate* gate_;
  CountersRuntime* counters_ = nullptr;
  ProbeRuntime* probes_ = nullptr;
  LldpRuntime* lldp_ = nullptr;
  MeshRuntime* mesh_ = nullptr;
  ConfirmGuard* confirm_ = nullptr;
  std::atomic<bool> shutting_down_{false};
};

// absl and gRPC status codes share their numbering.
inline grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// GetCounters of both services: checks the names, reads `counters`
// (UNAVAILABLE when null).
grpc::Status ReadCounters(CountersRuntime* counters, const roced::v1::GetCountersRequest& request,
                          roced::v1::GetCountersResponse* response);

// ProbePeerService (agent-to-agent probe set-up) is in probe_service.h.

}  // namespace roced::agent
