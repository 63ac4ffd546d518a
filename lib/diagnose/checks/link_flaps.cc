// The diagnose check `link_flaps`: more than 3 carrier changes in 6 hours is a
// flapping link (cable, optics, port).
#include "diagnose/check.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace roced::diagnose {

namespace {

// link_flaps: more carrier changes than this within the history's window.
constexpr size_t kMaxCarrierChanges = 3;

void LinkFlaps(const Ctx& c) {
  for (const metrics::LinkFlaps& f : c.in.link_flaps) {
    if (f.changes <= kMaxCarrierChanges || !f.last_change) continue;
    c.Add(roced::v1::SEVERITY_WARNING, f.netdev,
          absl::StrFormat("%d carrier changes in the last %s (last at %s, %s ago)", f.changes,
                          absl::FormatDuration(f.window),
                          absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", *f.last_change, absl::UTCTimeZone()),
                          absl::FormatDuration(absl::Trunc(f.as_of - *f.last_change, absl::Seconds(1)))),
          absl::StrCat("the kernel counts ", f.carrier_changes, " carrier changes since the netdev was created",
                       f.own_changes > 0 ? absl::StrCat(" (", f.own_changes, " more in the window were roced's own PFC "
                                                        "writes, which mlx5 answers with a link toggle: not counted)")
                                         : "",
                       "; each down/up breaks the RoCE connections over it (QPs retry, then fail with "
                       "retry-exceeded) and stalls the traffic while the link retrains"),
          absl::StrCat("check the cable or optic (`ethtool -m ", f.netdev, "` for the DOM levels, `ethtool ", f.netdev,
                       "`) and the switch port's error counters and log; reseat or replace the cable/optic"));
  }
}

const char* NoLinkWatched(const Inputs& in) {
  return in.link_flaps.empty() ? "no RoCE netdev's carrier is watched" : nullptr;
}

}  // namespace

const Check kLinkFlapsCheck = {{"link_flaps", "RoCE netdevs whose carrier changed more than 3 times in 6 h",
                        "carrier changes per RoCE netdev (link_flaps)",
                        "more than 3 carrier changes in 6 hours is a flapping link (cable, optics, port)"},
                       LinkFlaps, NoLinkWatched};

}  // namespace roced::diagnose
