// Planning: which interfaces a config names, and the steps that move the
// observed node to the desired one. Pure functions: the same inputs give the
// same plan, and a node that already matches gives an empty plan.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "reconcile/state.h"

namespace roced::reconcile {

// Maps each config interface to a netdev (and its RDMA device, if any).
// `devices` is what discovery found; `netdev_exists` says whether a netdev
// without an RDMA device exists. An entry that names nothing on this node is
// INVALID_ARGUMENT naming the field path ("interfaces[1].match.netdev").
absl::StatusOr<std::vector<Target>> ResolveTargets(
    const roced::v1::NodeConfig& config, const std::vector<roced::v1::RdmaDevice>& devices,
    const std::function<bool(const std::string&)>& netdev_exists);

// The hugepage pools a config names.
std::vector<HugepagePool> HugepagePools(const roced::v1::NodeConfig& config);

// Diff of desired vs observed. `observed.interfaces` is parallel to
// `targets`. Fields the node cannot control become UNSUPPORTED field
// statuses and no step.
Plan ComputePlan(const roced::v1::NodeConfig& desired, const std::vector<Target>& targets,
                 const Observed& observed);

// The 64-entry DSCP map mlnx_qos installs for `--trust dscp`
// (DSCP d -> priority d/8), used when trust is dscp but no map is given.
DscpMap DefaultDscpMap();

}  // namespace roced::reconcile
