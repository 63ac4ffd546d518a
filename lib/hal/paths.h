// Roots of the kernel pseudo-filesystems the agent reads and writes. Every
// kernel file path in roced hangs off one of these, so tests can point the
// agent at a checked-in fixture tree (tests/fixtures/sysfs) instead of /sys.
#pragma once

#include <string>

namespace roced::hal {

struct Paths {
  std::string sysfs = "/sys";
  std::string procfs = "/proc";
  std::string configfs = "/sys/kernel/config";
  std::string debugfs = "/sys/kernel/debug";

  // True when sysfs is the live kernel's (so libibverbs, which always reads
  // the real /sys, sees the same devices).
  bool IsLiveSysfs() const { return sysfs == "/sys"; }
};

}  // namespace roced::hal
