// Which RDMA port an interface entry of a NodeConfig names: the one rule
// reconcile (targets), probes (the probing interface's ToS) and anything else
// that maps `interfaces[].match` onto discovered devices use.
#pragma once

#include "roced/v1/config.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::model {

// True when `match` names `port` of `device`: by netdev, by RDMA device
// name, or by PCI address (compared case-insensitively: sysfs writes lower
// case, operators often copy upper case from lspci -D or vendor tools).
bool MatchesPort(const roced::v1::InterfaceMatch& match, const roced::v1::RdmaDevice& device,
                 const roced::v1::Port& port);

}  // namespace roced::model
