// Where a NIC sits in the NUMA topology and where the things that serve it
// run: the CPUs of each NUMA node, the CPUs this process may run on, and the
// CPUs each of a device's interrupts may be delivered to.
//   <sysfs>/devices/system/node/node<N>/cpulist          CPUs of node N
//   <sysfs>/class/infiniband/<dev>/device/msi_irqs/<irq>  the device's MSI(-X) vectors
//   <procfs>/irq/<irq>/smp_affinity_list                  CPUs an IRQ may go to
// (The per-node hugepage pools are HugepagePools::PerNumaNode.) Stateless,
// thread-safe; nothing is cached.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/string_view.h"
#include "hal/paths.h"

namespace roced::hal {

using CpuSet = std::set<uint32_t>;

// A kernel CPU list ("0-3,8,10-11\n"); nullopt when malformed (a range
// going down, a non-number, more than 65536 CPUs).
std::optional<CpuSet> ParseCpuList(absl::string_view text);
// The same set written back in the kernel's list form ("0-3,8,10-11").
std::string FormatCpuList(const CpuSet& cpus);

// The node number of a NUMA node directory's name ("node1" -> 1); nullopt
// for any other name (cpu0, has_cpu, ...).
std::optional<int32_t> ParseNumaNodeDirName(absl::string_view name);

// Each NUMA node's number with its directory
// (<sysfs>/devices/system/node/node<N>); empty without NUMA topology.
std::map<int32_t, std::string> NumaNodeDirs(const Paths& paths);

// The CPUs of each NUMA node; empty when the kernel exposes no NUMA
// topology. A node whose cpulist cannot be read is left out.
std::map<int32_t, CpuSet> NumaNodeCpus(const Paths& paths);

// The CPUs this process may run on (sched_getaffinity); empty on failure.
CpuSet AllowedCpus();

// Each MSI/MSI-X interrupt of the RDMA device's PCI function with the CPUs
// it may be delivered to; empty when the device has no msi_irqs directory
// (a virtual device, legacy INTx). An IRQ whose affinity cannot be read is
// left out.
std::map<uint32_t, CpuSet> DeviceIrqAffinity(const Paths& paths, const std::string& rdma_device);

}  // namespace roced::hal
