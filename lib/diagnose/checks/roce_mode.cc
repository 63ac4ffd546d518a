// The diagnose check `roce_mode`: rdma_cm's default mode must be RoCE v2: v1
// is not routable and ignores DSCP.
#include "diagnose/check.h"

namespace roced::diagnose {

namespace {

void RoceMode(const Ctx& c) {
  for (const auto& [netdev, obs] : RoceNetdevs(c.in)) {
    if (obs == nullptr || !obs->roce_mode || *obs->roce_mode != roced::v1::ROCE_MODE_V1) continue;
    c.Add(roced::v1::SEVERITY_WARNING, netdev, "rdma_cm's default RoCE mode is v1",
          "connections made through rdma_cm (NCCL, UCX, NVMe-oF, librdmacm tools) use RoCE v1 GIDs: "
          "layer 2 only, not routable, no ECN in an IP header",
          "set `roce: {default_mode: v2}` for the interface (or `cma_roce_mode -m 2`)");
  }
}

}  // namespace

const Check kRoceModeCheck = {{"roce_mode", "rdma_cm's default RoCE mode left at v1",
                        "rdma_cm's default RoCE mode per netdev (netdevs)",
                        "rdma_cm's default mode must be RoCE v2: v1 is not routable and ignores DSCP"},
                       RoceMode, NoObservedNetdev};

}  // namespace roced::diagnose
