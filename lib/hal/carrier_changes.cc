#include "hal/carrier_changes.h"

#include "absl/strings/str_cat.h"
#include "hal/counter_files.h"
#include "util/fs.h"

namespace roced::hal {

absl::StatusOr<uint64_t> ReadCarrierChanges(const Paths& paths, const std::string& netdev) {
  const std::string path = absl::StrCat(paths.sysfs, "/class/net/", netdev, "/carrier_changes");
  absl::StatusOr<std::string> text = util::ReadFile(path);
  if (!text.ok()) return text.status();
  uint64_t value = 0;
  if (!ParseCounterText(text->data(), text->size(), &value)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a count: '", *text, "'"));
  }
  return value;
}

}  // namespace roced::hal
