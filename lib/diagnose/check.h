// One diagnose check is one file under lib/diagnose/checks/, defining its
// Check: its name and what it looks for, the Inputs it reads, the field
// guide's rule it implements, its run, and why it may have nothing to look
// at. checks.cc lists them in the order findings come out. (A list, not
// registration by static initialisers: the linker leaves out an object of a
// static library nothing refers to, and its registration with it.)
// This header is the checks' own; callers use checks.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diagnose/checks.h"

namespace roced::diagnose {

// Where a check's findings go, and its inputs.
struct Ctx {
  const Inputs& in;
  std::vector<roced::v1::Finding>* out;
  const char* check;
  void Add(roced::v1::Severity sev, const std::string& object, const std::string& summary, const std::string& detail,
           const std::string& remedy) const;
};

// Why a check has nothing to look at (it is then skipped, not passed), or
// null when it has its inputs.
using SkipReason = const char* (*)(const Inputs&);

struct Check {
  CheckInfo info;
  void (*run)(const Ctx&);
  SkipReason skip = nullptr;  // null: the check always has its inputs
};

// Every RoCE port (Ethernet link layer) with its device.
void ForEachRocePort(const Inputs& in,
                     const std::function<void(const roced::v1::RdmaDevice&, const roced::v1::Port&)>& fn);
// "mlx5_0/1 (eth0)".
std::string PortName(const roced::v1::RdmaDevice& dev, const roced::v1::Port& port);
// A priority bitmask as "[3,4]".
std::string Prios(uint8_t mask);
// The RoCE netdevs (each once), with their observation when there is one.
std::vector<std::pair<std::string, const reconcile::InterfaceObserved*>> RoceNetdevs(const Inputs& in);
// The ToS RoCE traffic leaves `netdev` with: rdma_cm's default when set,
// else the config's roce.default_tos for the interface.
std::optional<uint32_t> RoceTos(const Inputs& in, const std::string& netdev, const reconcile::InterfaceObserved& obs);

// A hugepage size in kB as "2Mi", "1Gi".
std::string PageSize(uint64_t kb);

// Skip reasons several checks share.
const char* NoRocePort(const Inputs& in);
const char* NoObservedNetdev(const Inputs& in);
const char* NoDevice(const Inputs& in);

// The checks, one a file (lib/diagnose/checks/<name>.cc).
extern const Check kPortStateCheck;
extern const Check kRoceV2GidCheck;
extern const Check kRoceModeCheck;
extern const Check kPfcDscpCheck;
extern const Check kSwitchAlignmentCheck;
extern const Check kDcbxModeCheck;
extern const Check kEcnCheck;
extern const Check kMtuCheck;
extern const Check kPcieCheck;
extern const Check kHugepagesCheck;
extern const Check kMemlockCheck;
extern const Check kProbesCheck;
extern const Check kConvergedCheck;
extern const Check kPauseWithoutEcnCheck;
extern const Check kLinkFlapsCheck;
extern const Check kProbeBaselineCheck;
extern const Check kNumaLocalityCheck;
extern const Check kNeighboursCheck;
extern const Check kArpFluxCheck;
extern const Check kClockSyncCheck;

}  // namespace roced::diagnose
