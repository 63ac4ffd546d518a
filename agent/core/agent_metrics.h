// The agent's own metric families (lib/metrics/families.h: reconcile,
// discovery, config loads and rollbacks), registered with the rollback
// reasons the confirm policy names.
#pragma once

#include "metrics/families.h"
#include "prometheus/registry.h"

namespace roced::agent {

using AgentMetrics = metrics::AgentFamilies;

// Registers them on the registry the metrics endpoint exposes.
AgentMetrics RegisterAgentMetrics(prometheus::Registry& registry);

}  // namespace roced::agent
