// Roots of the kernel pseudo-filesystems the agent reads and writes. Every
// kernel file path in roced hangs off one of these, so tests can point the
// agent at a checked-in fixture tree (tests/fixtures/sysfs) instead of /sys.
#pragma once

#include <sys/stat.h>

#include <string>

#include "model/defaults.h"

namespace roced::hal {

struct Paths {
  std::string sysfs = model::defaults::kSysfsRoot;
  std::string procfs = model::defaults::kProcfsRoot;
  std::string configfs = model::defaults::kConfigfsRoot;
  std::string debugfs = model::defaults::kDebugfsRoot;

  // True when sysfs is the live kernel's (so libibverbs, which always reads
  // the real /sys, sees the same devices): "/sys", "" (paths then start at
  // "/"), or any other spelling of the same directory ("/sys/", "//sys",
  // "/sys/.", a symlink to it), told by its device and inode.
  bool IsLiveSysfs() const {
    if (sysfs.empty() || sysfs == model::defaults::kSysfsRoot) return true;
    struct stat given {}, live {};
    return ::stat(sysfs.c_str(), &given) == 0 && ::stat(model::defaults::kSysfsRoot, &live) == 0 &&
           given.st_dev == live.st_dev && given.st_ino == live.st_ino;
  }
};

}  // namespace roced::hal
