#include "hal/pressure.h"

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "util/fs.h"

namespace roced::hal {

std::optional<double> CpuPressureAvg10(const Paths& paths) {
  absl::StatusOr<std::string> text = util::ReadFile(paths.procfs + "/pressure/cpu");
  if (!text.ok()) return std::nullopt;
  // "some avg10=1.23 avg60=... avg300=... total=..."
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (!absl::StartsWith(line, "some ")) continue;
    for (absl::string_view field : absl::StrSplit(line, ' ')) {
      double v = 0;
      if (absl::ConsumePrefix(&field, "avg10=") && absl::SimpleAtod(field, &v)) return v;
    }
  }
  return std::nullopt;
}

}  // namespace roced::hal
