// The diagnose check `numa_locality`: hugepages, the CPUs and the NIC's IRQs
// belong on the NIC's NUMA node.
#include "diagnose/check.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "probe/baseline.h"

namespace roced::diagnose {

namespace {

// The NUMA node each CPU belongs to.
std::map<uint32_t, int32_t> CpuNodes(const Inputs& in) {
  std::map<uint32_t, int32_t> nodes;
  for (const auto& [node, cpus] : in.numa_cpus) {
    for (uint32_t cpu : cpus) nodes[cpu] = node;
  }
  return nodes;
}

// The NUMA nodes `cpus` fall on, as "1" or "1,2".
std::string NodesOf(const hal::CpuSet& cpus, const std::map<uint32_t, int32_t>& cpu_nodes) {
  std::set<int32_t> nodes;
  for (uint32_t cpu : cpus) {
    if (auto it = cpu_nodes.find(cpu); it != cpu_nodes.end()) nodes.insert(it->second);
  }
  return absl::StrJoin(nodes, ",");
}

bool AnyOn(const hal::CpuSet& cpus, const hal::CpuSet& node_cpus) {
  return std::any_of(cpus.begin(), cpus.end(), [&](uint32_t c) { return node_cpus.count(c) > 0; });
}

std::string DeviceName(const roced::v1::RdmaDevice& dev) {
  return absl::StrCat(dev.name(), " (", dev.pci_address(), dev.pci_address().empty() ? "" : ", ", "NUMA node ",
                      dev.numa_node(), ")");
}

void NumaHugepages(const Ctx& c, const roced::v1::RdmaDevice& dev) {
  std::vector<std::string> elsewhere;
  uint64_t largest_kb = 0;
  uint64_t largest_pages = 0;
  for (const auto& [node, pools] : c.in.numa_hugepages) {
    for (const auto& [kb, pages] : pools) {
      if (pages == 0) continue;
      if (node == dev.numa_node()) return;  // some are local
      elsewhere.push_back(absl::StrCat("node ", node, ": ", pages, " x ", kb, " kB"));
      if (pages * kb > largest_pages * largest_kb) std::tie(largest_kb, largest_pages) = std::tie(kb, pages);
    }
  }
  if (elsewhere.empty()) return;  // none at all: the hugepages check says it
  c.Add(roced::v1::SEVERITY_WARNING, DeviceName(dev),
        absl::StrCat("hugepages are reserved only on other NUMA nodes, none on the NIC's node ", dev.numa_node()),
        absl::StrCat(absl::StrJoin(elsewhere, "; "),
                     "; RDMA buffers taken from these pools sit across the inter-socket link from the NIC, "
                     "so every DMA crosses it (less bandwidth, more latency)"),
        absl::StrFormat("reserve the pool on the NIC's node: `hugepages: [{size: %s, count: %d, numa_node: %d}]`",
                        PageSize(largest_kb), largest_pages, dev.numa_node()));
}

void NumaAllowedCpus(const Ctx& c, const roced::v1::RdmaDevice& dev, const hal::CpuSet& node_cpus) {
  if (c.in.allowed_cpus.empty() || node_cpus.empty() || AnyOn(c.in.allowed_cpus, node_cpus)) return;
  c.Add(roced::v1::SEVERITY_WARNING, DeviceName(dev),
        absl::StrCat("roced may run only on CPUs ", hal::FormatCpuList(c.in.allowed_cpus), " (NUMA node ",
                     NodesOf(c.in.allowed_cpus, CpuNodes(c.in)), "), none on the NIC's node ", dev.numa_node(),
                     " (CPUs ", hal::FormatCpuList(node_cpus), ")"),
        "probes run from across the inter-socket link and their latency includes it; RDMA applications "
        "started with the same affinity pay the same",
        absl::StrCat("include node ", dev.numa_node(), "'s CPUs in the unit's CPUAffinity= (or run "
                     "`numactl --cpunodebind=", dev.numa_node(), "`), for applications too"));
}

void NumaIrqs(const Ctx& c, const roced::v1::RdmaDevice& dev, const hal::CpuSet& node_cpus) {
  auto it = c.in.device_irqs.find(dev.name());
  if (it == c.in.device_irqs.end() || node_cpus.empty()) return;
  const std::map<uint32_t, int32_t> cpu_nodes = CpuNodes(c.in);
  std::vector<std::string> remote;
  for (const auto& [irq, cpus] : it->second) {
    if (cpus.empty() || AnyOn(cpus, node_cpus)) continue;
    remote.push_back(absl::StrCat(irq, " -> CPUs ", hal::FormatCpuList(cpus), " (node ", NodesOf(cpus, cpu_nodes),
                                  ")"));
  }
  if (remote.empty()) return;
  const size_t n = remote.size();
  if (n > 8) {
    remote.resize(8);
    remote.push_back("...");
  }
  c.Add(roced::v1::SEVERITY_WARNING, DeviceName(dev),
        absl::StrCat(n, " of ", it->second.size(), " IRQs are pinned to CPUs off the NIC's NUMA node ",
                     dev.numa_node()),
        absl::StrCat(absl::StrJoin(remote, "; "),
                     "; completion and event interrupts are then handled across the inter-socket link"),
        absl::StrCat("pin them to node ", dev.numa_node(), "'s CPUs ", hal::FormatCpuList(node_cpus),
                     " (/proc/irq/<n>/smp_affinity_list, mlnx-tools' set_irq_affinity_cpulist.sh), and keep "
                     "irqbalance from moving them back"));
}

void NumaLocality(const Ctx& c) {
  for (const auto& dev : c.in.state.devices()) {
    if (dev.numa_node() < 0) continue;  // no NUMA information: nothing to compare
    auto node = c.in.numa_cpus.find(dev.numa_node());
    const hal::CpuSet none;
    const hal::CpuSet& node_cpus = node == c.in.numa_cpus.end() ? none : node->second;
    NumaHugepages(c, dev);
    NumaAllowedCpus(c, dev, node_cpus);
    NumaIrqs(c, dev, node_cpus);
  }
  const probe::BufferBindFailures& binds = c.in.probe_buffer_binds;
  if (binds.count == 0) return;
  c.Add(roced::v1::SEVERITY_WARNING, "probe buffers",
        absl::StrCat(binds.count, " probe buffer(s) could not be bound to their NIC's NUMA node (last: node ",
                     binds.node, ", ", binds.error, ")"),
        "mbind(2) failed, so the buffers sit wherever the kernel put them: probe latencies from a NIC on the "
        "other socket include the cross-socket hop and are off against perftest run with numactl",
        "allow mbind(2): the systemd unit does (SystemCallFilter=mbind); under the DaemonSet's RuntimeDefault "
        "seccomp it needs SYS_NICE, as deploy/kubernetes/daemonset.yaml grants");
}

const char* NoNumaTopology(const Inputs& in) {
  if (const char* r = NoDevice(in)) return r;
  return in.numa_cpus.empty() ? "the NUMA topology could not be read" : nullptr;
}

}  // namespace

const Check kNumaLocalityCheck = {{"numa_locality", "hugepages, the agent's CPUs and the NIC's IRQs vs the NIC's NUMA node",
                        "NUMA topology, hugepages per node, allowed CPUs, IRQ affinity, probe buffer binds",
                        "hugepages, the CPUs and the NIC's IRQs belong on the NIC's NUMA node"},
                       NumaLocality, NoNumaTopology};

}  // namespace roced::diagnose
