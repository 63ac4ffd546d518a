// Roots of the kernel pseudo-filesystems the agent reads and writes. Every
// kernel file path in roced hangs off one of these, so tests can point the
// agent at a checked-in fixture tree (tests/fixtures/sysfs) instead of /sys.
#pragma once

#include <string>

#include "model/defaults.h"

namespace roced::hal {

struct Paths {
  std::string sysfs = model::defaults::kSysfsRoot;
  std::string procfs = model::defaults::kProcfsRoot;
  std::string configfs = model::defaults::kConfigfsRoot;
  std::string debugfs = model::defaults::kDebugfsRoot;

  // True when sysfs is the live kernel's (so libibverbs, which always reads
  // the real /sys, sees the same devices).
  bool IsLiveSysfs() const { return sysfs == model::defaults::kSysfsRoot; }
};

}  // namespace roced::hal
