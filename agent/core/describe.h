// ProbePeer.Describe's answer (the fleet mesh's membership): who
// this agent is and where it stands, from what the agent already holds.
// Pure and thread-safe.
#pragma once

#include <vector>

#include "roced/v1/peer.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::agent {

// From the agent's state and the LLDP neighbours it hears:
//  - node_name: the state's hostname; version: the agent's;
//  - tor and pod: the accepted config's mesh.tor (tor_source "config") and
//    mesh.pod; without mesh.tor, the system name (else the chassis ID) the
//    switch advertises on the first RoCE netdev, by name, that hears one
//    (tor_source "lldp:<netdev>"); both empty when none does;
//  - endpoints: per Ethernet port of each device, the RoCE v2 GID of an
//    IPv4 address with the lowest index (ports without one are left out),
//    by device and port. The UD queue pair is 0: no mesh responder yet.
roced::v1::DescribeResponse DescribeNode(const roced::v1::NodeState& state,
                                         const std::vector<roced::v1::LldpNeighbor>& neighbors);

}  // namespace roced::agent
