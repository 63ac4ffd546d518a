#include "mesh/slowdown.h"

#include <algorithm>

#include "mesh/schedule.h"

namespace roced::mesh {

double NextSlowdown(double current, double cpu_pressure_avg10) {
  double next = current;
  if (cpu_pressure_avg10 > kPressureHigh) next = current * 2;
  if (cpu_pressure_avg10 < kPressureLow) next = current / 2;
  return std::clamp(next, 1.0, kMaxSlowdown);
}

}  // namespace roced::mesh
