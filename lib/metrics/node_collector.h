// Prometheus collector for the node's RDMA inventory: build info, device and
// port info and state, PCIe link health. Values are computed from a state
// snapshot at scrape time (no background polling); a device that disappears
// simply stops being reported.
//
// Collect() is called on prometheus-cpp's HTTP threads; the snapshot
// function must be thread-safe.
#pragma once

#include <functional>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "roced/v1/state.pb.h"

namespace roced::metrics {

class NodeCollector : public prometheus::Collectable {
 public:
  using Snapshot = std::function<roced::v1::NodeState()>;
  explicit NodeCollector(Snapshot snapshot) : snapshot_(std::move(snapshot)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

  // Builds the families for one state (exposed for tests).
  static std::vector<prometheus::MetricFamily> Families(const roced::v1::NodeState& state);

 private:
  Snapshot snapshot_;
};

// Lower-case label value for a GID type: "ib", "roce_v1", "roce_v2".
const char* GidTypeLabel(roced::v1::GidType type);
// Lower-case label value for a port state: "down", "init", "armed", "active".
const char* PortStateLabel(roced::v1::PortState state);

}  // namespace roced::metrics
