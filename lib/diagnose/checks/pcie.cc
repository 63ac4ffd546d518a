// The diagnose check `pcie`: a NIC trained below its slot's width or speed
// cannot reach line rate.
#include "diagnose/check.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace roced::diagnose {

namespace {

double LaneGbps(double gts) {
  return gts * (gts >= 8.0 ? 128.0 / 130.0 : 0.8);  // 128b/130b from 8 GT/s, 8b/10b below
}

void Pcie(const Ctx& c) {
  for (const auto& dev : c.in.state.devices()) {
    const auto& l = dev.pcie();
    if (!l.degraded()) continue;
    c.Add(roced::v1::SEVERITY_WARNING, absl::StrCat(dev.name(), " (", dev.pci_address(), ")"),
          absl::StrFormat("PCIe link runs x%d %g GT/s; the device supports x%d %g GT/s", l.current_width(),
                          l.current_speed_gts(), l.max_width(), l.max_speed_gts()),
          absl::StrFormat("at most ~%.0f Gb/s over PCIe instead of ~%.0f Gb/s: bandwidth probes and "
                          "applications top out there",
                          l.current_width() * LaneGbps(l.current_speed_gts()),
                          l.max_width() * LaneGbps(l.max_speed_gts())),
          "move the card to a slot with the full width, check BIOS bifurcation and riser, and reseat; "
          "`lspci -vv` LnkSta shows the trained link");
  }
}

}  // namespace

const Check kPcieCheck = {{"pcie", "NICs trained below their PCIe width or speed",
                        "each NIC's PCIe link and its capability (state)",
                        "a NIC trained below its slot's width or speed cannot reach line rate"},
                       Pcie, NoDevice};

}  // namespace roced::diagnose
