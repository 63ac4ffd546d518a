// The diagnose check `clock_sync`: the system clock must be synchronised; PTP
// hardware clocks should be used.
#include "diagnose/check.h"

#include <sys/timex.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace roced::diagnose {

namespace {

// The largest maxerror of a synchronised clock that still passes: the
// discipline daemons keep it well below (chronyd, ptp4l+phc2sys: ms or
// less); beyond 100 ms, timestamps across nodes no longer line up.
constexpr int64_t kClockMaxErrorBoundUs = 100000;

void ClockSync(const Ctx& c) {
  if (!c.in.clock) return;
  const hal::KernelClock& k = *c.in.clock;
  const bool unsync = hal::ClockStatusIsError(k.status);
  const std::string values =
      absl::StrFormat("adjtimex: state %d%s, status %s, maxerror %d us, esterror %d us, offset %d ns", k.state,
                      k.state == TIME_ERROR ? " (TIME_ERROR)" : "", hal::ClockStatusNames(k.status), k.max_error_us,
                      k.est_error_us, k.offset_ns);
  if (unsync) {
    c.Add(roced::v1::SEVERITY_WARNING, "system clock", "the system clock is not synchronised",
          absl::StrCat(values, "; logs, probe timestamps and counters of different nodes cannot be lined up, "
                               "and the field guides trace irregular latency jitter to bad time sync"),
          "run a time service (chronyd, or ptp4l + phc2sys where the NICs have PTP clocks) and check "
          "`chronyc tracking` / `timedatectl`");
  } else if (k.max_error_us > kClockMaxErrorBoundUs) {
    c.Add(roced::v1::SEVERITY_WARNING, "system clock",
          absl::StrCat("the clock's maximum error is ", k.max_error_us / 1000, " ms (bound ",
                       kClockMaxErrorBoundUs / 1000, " ms)"),
          absl::StrCat(values, "; the time service updates the kernel rarely or tracks a poor source"),
          "check the time service's sources and its state (`chronyc tracking`, `pmc -u -b 0 'GET TIME_STATUS_NP'`)");
  }
  if (!unsync || c.in.ptp_clocks.empty()) return;
  std::vector<std::string> clocks;
  for (const auto& p : c.in.ptp_clocks) {
    clocks.push_back(p.clock_name.empty() ? p.name : absl::StrCat(p.name, " (", p.clock_name, ")"));
  }
  c.Add(roced::v1::SEVERITY_WARNING, absl::StrJoin(clocks, ", "),
        "PTP hardware clocks are present but nothing synchronises the system clock",
        absl::StrCat(values, "; the NICs can timestamp PTP in hardware, yet the kernel's clock is free-running"),
        absl::StrCat("run ptp4l on the PTP port (`ptp4l -i <netdev> -H`) and phc2sys to steer the system clock "
                     "from ", c.in.ptp_clocks[0].name, " (`phc2sys -s <netdev> -w`), or chronyd with a PHC refclock"));
}

const char* NoClock(const Inputs& in) { return in.clock ? nullptr : "adjtimex failed"; }

}  // namespace

const Check kClockSyncCheck = {{"clock_sync", "the system clock not synchronised; PTP clocks unused",
                        "the kernel clock (adjtimex) and PTP hardware clocks",
                        "the system clock must be synchronised; PTP hardware clocks should be used"},
                       ClockSync, NoClock};

}  // namespace roced::diagnose
