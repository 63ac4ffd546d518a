#include "agent/core/agent_metrics.h"

#include "model/confirm_policy.h"

namespace roced::agent {

AgentMetrics AgentMetrics::Register(prometheus::Registry& registry) {
  AgentMetrics m;
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
  for (const char* r : {model::kReasonConfirmTimeout, model::kReasonRollback, model::kGateConverged, model::kGatePfcStorm,
                        model::kGateMeshLoss, model::kGateMeshP99, model::kGateProbe}) {
    m.config_rollbacks->Add({{"reason", r}});
  }
  return m;
}

}  // namespace roced::agent
