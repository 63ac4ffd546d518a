// The diagnose check `probe_baseline`: probe latency or bandwidth worse than
// under the previous driver or firmware is a regression of the upgrade.
#include "diagnose/check.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/ascii.h"
#include "probe/baseline.h"

namespace roced::diagnose {

namespace {

// probe_baseline: figures needed on each side, and the changes that count.
constexpr int kMinBaselineResults = 3;
constexpr double kMaxP50Rise = 0.20;
constexpr double kMaxP99Rise = 0.50;
constexpr double kMaxBandwidthDrop = 0.10;

std::string VersionText(const roced::v1::ProbeFigures& f) {
  return absl::StrCat(f.driver(), f.driver_version().empty() ? "" : absl::StrCat(" ", f.driver_version()),
                      ", firmware ", f.fw_version().empty() ? "unknown" : f.fw_version());
}

std::string KindText(roced::v1::ProbeKind kind) {
  std::string name = roced::v1::ProbeKind_Name(kind);
  absl::StrReplaceAll({{"PROBE_KIND_", ""}}, &name);
  return absl::AsciiStrToLower(name);
}

void BaselineRegression(const Ctx& c, const roced::v1::ProbeBaseline& b, const char* figure,
                        const google::protobuf::RepeatedField<double>& before,
                        const google::protobuf::RepeatedField<double>& after, double limit, const char* unit) {
  if (before.size() < kMinBaselineResults || after.size() < kMinBaselineResults) return;
  const double was = probe::Median(before), now = probe::Median(after);
  if (was <= 0) return;
  const double change = (now - was) / was;
  if (limit > 0 ? change <= limit : change >= limit) return;
  c.Add(roced::v1::SEVERITY_WARNING, b.peer(),
        absl::StrFormat("%s to %s %s %.0f%% since the driver/firmware changed: %.2f -> %.2f %s", figure, b.peer(),
                        change > 0 ? "rose" : "fell", std::abs(change) * 100, was, now, unit),
        absl::StrFormat("%s probes (size %d) from %s, median of the last %d results under %s vs %d under %s",
                        KindText(b.kind()), b.size(),
                        b.device(), after.size(), VersionText(b.current()), before.size(),
                        VersionText(b.previous())),
        "confirm with perftest between the two nodes (ib_write_lat / ib_write_bw), read the release notes "
        "for changed defaults (congestion control, adaptive routing, PCIe settings), and roll the driver or "
        "firmware back if the regression stands");
}

void ProbeBaseline(const Ctx& c) {
  for (const auto& b : c.in.probe_baselines.baselines()) {
    if (!b.has_previous()) continue;
    const roced::v1::ProbeFigures &was = b.previous(), &now = b.current();
    BaselineRegression(c, b, "latency p50", was.p50_us(), now.p50_us(), kMaxP50Rise, "us");
    BaselineRegression(c, b, "latency p99", was.p99_us(), now.p99_us(), kMaxP99Rise, "us");
    BaselineRegression(c, b, "bandwidth", was.gbps(), now.gbps(), -kMaxBandwidthDrop, "Gb/s");
  }
}

const char* NoBaseline(const Inputs& in) {
  return in.probe_baselines.baselines().empty() ? "no probe baseline is recorded yet" : nullptr;
}

}  // namespace

const Check kProbeBaselineCheck = {{"probe_baseline", "probe figures worse than under the previous driver/firmware",
                        "probe figures per driver and firmware (probe_baselines)",
                        "probe latency or bandwidth worse than under the previous driver or firmware is a regression of the upgrade"},
                       ProbeBaseline, NoBaseline};

}  // namespace roced::diagnose
