#include "metrics/families.h"

namespace roced::metrics {

AgentFamilies AgentFamilies::Register(prometheus::Registry& registry,
                                      const std::vector<std::string>& rollback_reasons) {
  AgentFamilies m;
  m.reconcile_runs = &prometheus::BuildCounter()
                          .Name("roced_reconcile_runs_total")
                          .Help("Reconcile passes, by result: noop (in sync), success (applied), "
                                "failure (rolled back), drift_observed (observe mode).")
                          .Register(registry);
  m.drift_detected = &prometheus::BuildCounter()
                          .Name("roced_drift_detected_total")
                          .Help("Managed fields found changed behind the agent's back.")
                          .Register(registry)
                          .Add({});
  m.reconcile_duration = &prometheus::BuildHistogram()
                              .Name("roced_reconcile_duration_seconds")
                              .Help("Wall time of one reconcile pass (observe, plan, apply, verify).")
                              .Register(registry)
                              .Add({}, prometheus::Histogram::BucketBoundaries{
                                           0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                           2.5, 5});
  for (const char* r : {"noop", "success", "failure", "drift_observed"}) m.reconcile_runs->Add({{"result", r}});
  m.discovery_runs = &prometheus::BuildCounter()
                          .Name("roced_discovery_runs_total")
                          .Help("Device discovery passes, by result.")
                          .Register(registry);
  m.config_loads = &prometheus::BuildCounter()
                        .Name("roced_config_loads_total")
                        .Help("Config file loads (start-up and SIGHUP), by result.")
                        .Register(registry);
  m.config_rollbacks = &prometheus::BuildCounter()
                            .Name("roced_config_rollbacks_total")
                            .Help("Provisional configs returned from, by reason: confirm_timeout, rollback "
                                  "(asked for: RollbackConfig), or the confirm policy's gate that failed "
                                  "(converged, pfc_storm, mesh_loss, mesh_p99, probe).")
                            .Register(registry);
  m.discovery_duration = &prometheus::BuildHistogram()
                              .Name("roced_discovery_duration_seconds")
                              .Help("Wall time of one device discovery pass.")
                              .Register(registry)
                              .Add({}, prometheus::Histogram::BucketBoundaries{
                                           0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                           0.5, 1});
  for (const char* r : {"success", "error"}) {
    m.discovery_runs->Add({{"result", r}});
    m.config_loads->Add({{"result", r}});
  }
  for (const std::string& r : rollback_reasons) m.config_rollbacks->Add({{"reason", r}});
  return m;
}

ApiFamilies ApiFamilies::Register(prometheus::Registry& registry) {
  ApiFamilies m;
  m.requests = &prometheus::BuildCounter()
                    .Name("roced_api_requests_total")
                    .Help("gRPC calls to the agent by method, status code and the caller's roles "
                          "(\"none\" for callers refused before a role was known).")
                    .Register(registry);
  m.refusals = &prometheus::BuildCounter()
                    .Name("roced_api_refusals_total")
                    .Help("gRPC calls the agent refused before running them (no or unknown credentials, "
                          "a role short), by method and status code.")
                    .Register(registry);
  return m;
}

ProbeFamilies ProbeFamilies::Register(prometheus::Registry& registry) {
  ProbeFamilies m;
  m.latency = &prometheus::BuildHistogram()
                   .Name("roced_probe_latency_seconds")
                   .Help("One-way RDMA WRITE latency to a peer agent (half the round trip, as "
                         "ib_write_lat reports it); one observation per ping-pong sample.")
                   .Register(registry);
  m.bandwidth = &prometheus::BuildGauge()
                     .Name("roced_probe_bandwidth_bits_per_second")
                     .Help("RDMA WRITE bandwidth to a peer agent measured by the last successful "
                           "bandwidth probe (average over the probe, as ib_write_bw's BW average).")
                     .Register(registry);
  m.failures = &prometheus::BuildCounter()
                    .Name("roced_probe_failures_total")
                    .Help("Probes that failed, by peer and reason (peer_unavailable, "
                          "connect_timeout, timeout, wc_error:<status>, device_unavailable, ...).")
                    .Register(registry);
  m.last_success = &prometheus::BuildGauge()
                        .Name("roced_probe_last_success_timestamp_seconds")
                        .Help("Unix time at which the last successful probe of a peer and kind "
                              "finished.")
                        .Register(registry);
  return m;
}

MeshFamilies MeshFamilies::Register(prometheus::Registry& registry) {
  MeshFamilies m;
  m.sent = &prometheus::BuildCounter()
                .Name("roced_mesh_probes_sent_total")
                .Help("Mesh probes sent and settled (answered or lost), by peer ToR; by peer only under this "
                      "node's ToR.")
                .Register(registry);
  m.lost = &prometheus::BuildCounter()
                .Name("roced_mesh_probes_lost_total")
                .Help("Mesh probes not answered within the timeout.")
                .Register(registry);
  m.rtt = &prometheus::BuildHistogram()
               .Name("roced_mesh_rtt_seconds")
               .Help("Network round trip of answered mesh probes (the responder's hold subtracted).")
               .Register(registry);
  m.answered = &prometheus::BuildCounter()
                    .Name("roced_mesh_requests_answered_total")
                    .Help("Mesh probes of other agents this agent answered.")
                    .Register(registry)
                    .Add({});
  m.peers = &prometheus::BuildGauge().Name("roced_mesh_peers").Help("Peers on the pinglist, by scope.").Register(registry);
  m.slowdown = &prometheus::BuildGauge()
                    .Name("roced_mesh_slowdown")
                    .Help("Factor the mesh's probe rates are divided by under CPU pressure (1: full rate).")
                    .Register(registry)
                    .Add({});
  m.slowdown->Set(1);
  m.host_busy = &prometheus::BuildGauge()
                     .Name("roced_mesh_host_busy")
                     .Help("1 when this host's own state over the mesh window (CPU pressure, a stalled mesh "
                           "loop, an agent younger than the window) makes its probes say more about the host "
                           "than about its RNIC or the network (ListMeshResults host_busy says why); else 0.")
                     .Register(registry)
                     .Add({});
  m.info = &prometheus::BuildGauge()
                .Name("roced_mesh_info")
                .Help("This agent as the mesh knows it (value 1): its member name, ToR and pod, the names "
                      "the peer and ToR labels of other agents' roced_mesh_* series use.")
                .Register(registry);
  return m;
}

}  // namespace roced::metrics
