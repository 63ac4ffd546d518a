// The agent's own metric families (reconcile, discovery, config loads),
// registered once on the registry the metrics endpoint exposes. Pointers
// into the registry: valid as long as it lives; prometheus-cpp's metric
// objects are thread-safe.
#pragma once

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace roced::agent {

struct AgentMetrics {
  // Registers the families (with their label sets pre-created, so a scrape
  // before the first failure shows the failure series at 0).
  static AgentMetrics Register(prometheus::Registry& registry);

  prometheus::Family<prometheus::Counter>* reconcile_runs = nullptr;
  prometheus::Counter* drift_detected = nullptr;
  prometheus::Histogram* reconcile_duration = nullptr;
  prometheus::Family<prometheus::Counter>* discovery_runs = nullptr;
  prometheus::Histogram* discovery_duration = nullptr;
  prometheus::Family<prometheus::Counter>* config_loads = nullptr;
  // Provisional configs the agent returned from by itself, by reason
  // (confirm_timeout, or the confirm policy's gate that failed).
  prometheus::Family<prometheus::Counter>* config_rollbacks = nullptr;
};

}  // namespace roced::agent
