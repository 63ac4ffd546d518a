#include "hal/clock_sync.h"

#include <sys/timex.h>

#include <cerrno>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/fs.h"

namespace roced::hal {

absl::StatusOr<KernelClock> ReadKernelClock() {
  timex tx{};
  tx.modes = 0;  // read only: no capability needed, nothing changes
  const int state = adjtimex(&tx);
  if (state < 0) return util::ErrnoToStatus(errno, "adjtimex");
  KernelClock c;
  c.state = state;
  c.status = tx.status;
  c.max_error_us = tx.maxerror;
  c.est_error_us = tx.esterror;
  c.offset_ns = (tx.status & STA_NANO) ? tx.offset : tx.offset * 1000;
  return c;
}

bool ClockStatusIsError(int status) {
  if (status & (STA_UNSYNC | STA_CLOCKERR)) return true;
  // PPS discipline requested: a lost signal, or too much jitter or wander.
  if ((status & (STA_PPSFREQ | STA_PPSTIME)) && !(status & STA_PPSSIGNAL)) return true;
  if ((status & (STA_PPSTIME | STA_PPSJITTER)) == (STA_PPSTIME | STA_PPSJITTER)) return true;
  return (status & STA_PPSFREQ) && (status & (STA_PPSWANDER | STA_CLOCKERR));
}

std::string ClockStatusNames(int status) {
  static constexpr std::pair<int, const char*> kBits[] = {
      {STA_PLL, "PLL"},         {STA_PPSFREQ, "PPSFREQ"},   {STA_PPSTIME, "PPSTIME"},
      {STA_FLL, "FLL"},         {STA_INS, "INS"},           {STA_DEL, "DEL"},
      {STA_UNSYNC, "UNSYNC"},   {STA_FREQHOLD, "FREQHOLD"}, {STA_PPSSIGNAL, "PPSSIGNAL"},
      {STA_PPSJITTER, "PPSJITTER"}, {STA_PPSWANDER, "PPSWANDER"}, {STA_PPSERROR, "PPSERROR"},
      {STA_CLOCKERR, "CLOCKERR"}, {STA_NANO, "NANO"},     {STA_MODE, "MODE"},
      {STA_CLK, "CLK"},
  };
  std::vector<std::string> names;
  for (const auto& [bit, name] : kBits) {
    if (status & bit) names.push_back(name);
  }
  return names.empty() ? "none" : absl::StrJoin(names, "|");
}

std::vector<PtpClock> ListPtpClocks(const Paths& paths) {
  std::vector<PtpClock> clocks;
  const std::string root = paths.sysfs + "/class/ptp";
  auto names = util::ListDir(root);
  if (!names.ok()) return clocks;
  for (const std::string& name : *names) {
    if (!absl::StartsWith(name, "ptp")) continue;
    auto clock_name = util::ReadFileTrimmed(absl::StrCat(root, "/", name, "/clock_name"));
    clocks.push_back(PtpClock{name, clock_name.ok() ? *clock_name : ""});
  }
  return clocks;
}

}  // namespace roced::hal
