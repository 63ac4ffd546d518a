// Clock synchronisation as the kernel sees it: the NTP state of the system
// clock (adjtimex(2) with modes = 0, which only reads) and the PTP hardware
// clocks NICs expose (<sysfs>/class/ptp/ptp<N>/clock_name). Whatever
// disciplines the clock (chronyd, ntpd, ptp4l + phc2sys) clears STA_UNSYNC
// and keeps maxerror small; nothing doing so leaves STA_UNSYNC set and
// maxerror growing to the kernel's limit. Stateless, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hal/paths.h"

namespace roced::hal {

struct KernelClock {
  int state = 0;             // adjtimex's return: TIME_OK .. TIME_ERROR
  int status = 0;            // STA_* bits
  int64_t max_error_us = 0;  // the kernel's bound on its error
  int64_t est_error_us = 0;
  int64_t offset_ns = 0;     // last offset the discipline applied
};

// The maxerror the kernel caps at and sets when it gives up on the clock
// (NTP_PHASE_LIMIT, 16 s).
inline constexpr int64_t kKernelMaxErrorLimitUs = 16000000;

// adjtimex(modes = 0); INTERNAL with errno on failure.
absl::StatusOr<KernelClock> ReadKernelClock();

// True when the kernel reports TIME_ERROR for these status bits: STA_UNSYNC
// or STA_CLOCKERR, or PPS discipline asked for without a usable signal
// (kernel/time/ntp.c, is_error_status).
bool ClockStatusIsError(int status);
// The set STA_* bits by name ("PLL|UNSYNC|NANO").
std::string ClockStatusNames(int status);

struct PtpClock {
  std::string name;        // ptp0
  std::string clock_name;  // the driver's name for it (mlx5_ptp, ...)
};

// Every PTP hardware clock; empty when there is none.
std::vector<PtpClock> ListPtpClocks(const Paths& paths);

}  // namespace roced::hal
