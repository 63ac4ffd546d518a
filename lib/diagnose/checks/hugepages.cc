// The diagnose check `hugepages`: RDMA applications need hugepages reserved.
#include "diagnose/check.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace roced::diagnose {

namespace {

void Hugepages(const Ctx& c) {
  if (c.in.hugepages.empty()) return;
  uint64_t total = 0;
  for (const auto& [size, n] : c.in.hugepages) total += n;
  if (total > 0) return;
  std::vector<std::string> sizes;
  for (const auto& [size, n] : c.in.hugepages) {
    sizes.push_back(PageSize(size));
  }
  c.Add(roced::v1::SEVERITY_INFO, "node", "no hugepages reserved",
        absl::StrCat("sizes available: ", absl::StrJoin(sizes, ", "),
                     "; RDMA applications that register large buffers (DPDK, UCX/NCCL setups, SPDK) "
                     "expect a reserved pool, which gets harder to reserve the longer the node runs"),
        "reserve them in the config, e.g. `hugepages: [{size: 2Mi, count: 1024}]`");
}

const char* NoHugepageRead(const Inputs& in) {
  return in.hugepages.empty() ? "the hugepage pools could not be read" : nullptr;
}

}  // namespace

const Check kHugepagesCheck = {{"hugepages", "no hugepages reserved",
                        "the node's hugepage pools (hugepages)",
                        "RDMA applications need hugepages reserved"},
                       Hugepages, NoHugepageRead};

}  // namespace roced::diagnose
