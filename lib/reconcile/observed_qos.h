// The QoS of every RoCE port as the node has it (NodeState.interface_qos),
// whether or not the config manages a field: what `rocectl status` shows
// in place of `mlnx_qos -i`. Read through the same NodeIo the reconciler
// plans with, so status and the field statuses never disagree on a value.
#pragma once

#include <vector>

#include "reconcile/apply.h"
#include "reconcile/state.h"
#include "roced/v1/state.pb.h"

namespace roced::reconcile {

// The RoCE ports of `devices` (Ethernet link layer, with a netdev) as
// targets, in device and port order.
std::vector<Target> RocePorts(const std::vector<roced::v1::RdmaDevice>& devices);

// One port's observation as the API message: each value the node gave, and
// in `unread` each it did not (InterfaceQos says the names). `managed` and
// `observed_at` are the publisher's.
roced::v1::InterfaceQos ToInterfaceQos(const Target& port, const InterfaceObserved& observed);

// Every RoCE port of `devices`, observed through `io` now. Called where
// `io` may be used (NodeIo: one thread at a time; the agent's reconcile lock).
std::vector<roced::v1::InterfaceQos> ObserveQos(NodeIo* io, const std::vector<roced::v1::RdmaDevice>& devices);

}  // namespace roced::reconcile
