// The metric families the agent's own parts report to, defined and
// registered here, one struct per source (as node_exporter keeps one
// collector per source): the reconcile and discovery loop, the API gate, the
// RDMA probes, the fleet mesh. The runtimes hold the struct and set values;
// none builds a family of its own. The collectors of kernel state
// (counters, DCB, LLDP, node) are their own files in this folder.
//
// Each Register() adds the families to `registry` and returns pointers into
// it, valid as long as the registry lives; prometheus-cpp's metric objects
// are thread-safe. Label sets known in advance are created at 0, so a scrape
// before the first failure already shows its series.
#pragma once

#include <string>
#include <vector>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace roced::metrics {

// The reconcile loop, device discovery and config loads.
struct AgentFamilies {
  // `rollback_reasons`: the label values of roced_config_rollbacks_total
  // (the confirm timeout, an asked rollback, each confirm policy gate).
  static AgentFamilies Register(prometheus::Registry& registry, const std::vector<std::string>& rollback_reasons);

  prometheus::Family<prometheus::Counter>* reconcile_runs = nullptr;
  prometheus::Counter* drift_detected = nullptr;
  prometheus::Histogram* reconcile_duration = nullptr;
  prometheus::Family<prometheus::Counter>* discovery_runs = nullptr;
  prometheus::Histogram* discovery_duration = nullptr;
  prometheus::Family<prometheus::Counter>* config_loads = nullptr;
  // Provisional configs the agent returned from by itself, by reason.
  prometheus::Family<prometheus::Counter>* config_rollbacks = nullptr;
};

// The gRPC gate: every call by method, code and roles; the refused ones.
struct ApiFamilies {
  static ApiFamilies Register(prometheus::Registry& registry);

  prometheus::Family<prometheus::Counter>* requests = nullptr;
  prometheus::Family<prometheus::Counter>* refusals = nullptr;
};

// RDMA probes to configured peers (RC latency and bandwidth).
struct ProbeFamilies {
  static ProbeFamilies Register(prometheus::Registry& registry);

  prometheus::Family<prometheus::Histogram>* latency = nullptr;
  prometheus::Family<prometheus::Gauge>* bandwidth = nullptr;
  prometheus::Family<prometheus::Counter>* failures = nullptr;
  prometheus::Family<prometheus::Gauge>* last_success = nullptr;
};

// The fleet mesh's UD probes and this agent's part in it.
struct MeshFamilies {
  static MeshFamilies Register(prometheus::Registry& registry);

  prometheus::Family<prometheus::Counter>* sent = nullptr;
  prometheus::Family<prometheus::Counter>* lost = nullptr;
  prometheus::Family<prometheus::Histogram>* rtt = nullptr;
  prometheus::Counter* answered = nullptr;
  prometheus::Family<prometheus::Gauge>* peers = nullptr;
  prometheus::Gauge* slowdown = nullptr;  // starts at 1
  prometheus::Gauge* host_busy = nullptr;
  // roced_mesh_info{node,tor,pod}: one series, the one set last.
  prometheus::Family<prometheus::Gauge>* info = nullptr;
};

}  // namespace roced::metrics
