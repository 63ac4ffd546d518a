#include "agent/core/agent_metrics.h"

#include "model/confirm_policy.h"

namespace roced::agent {

AgentMetrics RegisterAgentMetrics(prometheus::Registry& registry) {
  return metrics::AgentFamilies::Register(
      registry, {model::kReasonConfirmTimeout, model::kReasonRollback, model::kGateConverged, model::kGatePfcStorm,
                 model::kGateMeshLoss, model::kGateMeshP99, model::kGateProbe});
}

}  // namespace roced::agent
