// How much the mesh slows down under CPU pressure: the agent's
// probes are the first thing to give way when the node is busy, slower but
// never stopped. The pressure is PSI's "some avg10" (hal/pressure.h reads
// it); the factor divides every rate of the schedule (MeshSchedule::
// SetSlowdown). Pure.
#pragma once

namespace roced::mesh {

// Above this CPU pressure (percent) the slowdown doubles; below kPressureLow
// it halves; in between it stays.
inline constexpr double kPressureHigh = 40;
inline constexpr double kPressureLow = 10;

// The next slowdown factor from the current one and the CPU pressure:
// doubled above kPressureHigh, halved below kPressureLow, within
// [1, kMaxSlowdown] (mesh/schedule.h).
double NextSlowdown(double current, double cpu_pressure_avg10);

}  // namespace roced::mesh
