// Pressure stall information (PSI, <procfs>/pressure/*): how much of the
// last ten seconds some task waited for a CPU. The mesh slows down on it
// (mesh/slowdown.h).
#pragma once

#include <optional>

#include "hal/paths.h"

namespace roced::hal {

// "some avg10" of <procfs>/pressure/cpu, in percent; nullopt when the file
// cannot be read or holds no such field (a kernel without PSI).
std::optional<double> CpuPressureAvg10(const Paths& paths);

}  // namespace roced::hal
