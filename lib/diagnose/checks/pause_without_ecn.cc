// The diagnose check `pause_without_ecn`: PFC pauses rising while ECN marks
// and CNPs stay flat means congestion is left to PFC alone.
#include "diagnose/check.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace roced::diagnose {

namespace {

// pause_without_ecn: a priority's pauses must rise by more than this over
// the window (a few pauses at a burst's start are normal even with ECN).
constexpr uint64_t kPauseGrowth = 1000;

std::optional<uint64_t> Growth(const std::optional<uint64_t>& from, const std::optional<uint64_t>& to) {
  if (!from || !to || *to < *from) return std::nullopt;  // not counted, or reset (driver reload)
  return *to - *from;
}

std::string GrowthText(const char* name, const std::optional<uint64_t>& from, const std::optional<uint64_t>& to) {
  if (!to) return absl::StrCat(name, " not counted");
  return absl::StrCat(name, " ", from.value_or(0), " -> ", *to);
}

// Whether the ECN side moved: true when a counter grew or none is kept.
bool EcnMoved(const metrics::CongestionCounters& a, const metrics::CongestionCounters& b) {
  bool counted = false;
  for (auto [from, to] : {std::pair{a.ecn_marked, b.ecn_marked}, std::pair{a.cnp_sent, b.cnp_sent},
                          std::pair{a.cnp_handled, b.cnp_handled}}) {
    std::optional<uint64_t> g = Growth(from, to);
    if (!g) continue;
    counted = true;
    if (*g > 0) return true;
  }
  return !counted;  // a driver without ECN counters (rxe) cannot be judged
}

void PauseWithoutEcnOn(const Ctx& c, const std::string& netdev, const metrics::CongestionCounters& a,
                       const metrics::CongestionCounters& b, absl::Duration span) {
  if (EcnMoved(a, b)) return;
  for (const auto& [prio, to] : b.pause_frames) {
    auto from = a.pause_frames.find(prio);
    if (from == a.pause_frames.end() || to < from->second || to - from->second <= kPauseGrowth) continue;
    c.Add(roced::v1::SEVERITY_WARNING, netdev,
          absl::StrFormat("PFC pause frames on priority %d rose by %d in %s while ECN marks and CNPs stayed flat",
                          prio, to - from->second, absl::FormatDuration(span)),
          absl::StrCat("pause frames (received + sent) ", from->second, " -> ", to, "; ",
                       GrowthText("ECN-marked packets", a.ecn_marked, b.ecn_marked), ", ",
                       GrowthText("CNPs sent", a.cnp_sent, b.cnp_sent), ", ",
                       GrowthText("CNPs handled", a.cnp_handled, b.cnp_handled),
                       ": congestion is absorbed by PFC alone, so it spreads upstream (head-of-line blocking, "
                       "pause storms) and DCQCN never slows the senders"),
          absl::StrCat("enable ECN marking on the switch queue of the RoCE traffic class with its threshold below "
                       "the PFC XOFF threshold, check the switch marks the DSCP RoCE uses, and the NICs' ECN on "
                       "priority ",
                       prio, " (`qos.ecn: {np_priorities: [", prio, "], rp_priorities: [", prio,
                       "]}`); `rocectl counters --netdev ", netdev, "` shows the counters"));
  }
}

void PauseWithoutEcn(const Ctx& c) {
  if (!c.in.congestion) return;
  const metrics::CongestionWindow& w = *c.in.congestion;
  if (!w.start) {
    c.Add(roced::v1::SEVERITY_INFO, "node", "no counter window yet: pauses vs ECN cannot be compared",
          absl::StrCat("counters sampled for ", absl::FormatDuration(w.sampled_for), "; the check compares "
                       "samples at least ", absl::FormatDuration(w.min_span), " apart"),
          "run the diagnosis again once the agent has been up for that long");
    return;
  }
  const absl::Duration span = w.end.at - w.start->at;
  for (const auto& [netdev, obs] : RoceNetdevs(c.in)) {
    auto a = w.start->netdevs.find(netdev);
    auto b = w.end.netdevs.find(netdev);
    if (a == w.start->netdevs.end() || b == w.end.netdevs.end()) continue;
    PauseWithoutEcnOn(c, netdev, a->second, b->second, span);
  }
}

const char* NoCongestionWindow(const Inputs& in) {
  return in.congestion ? nullptr : "the agent samples no congestion counters (no counters runtime)";
}

}  // namespace

const Check kPauseWithoutEcnCheck = {{"pause_without_ecn", "PFC pauses rising while ECN marks and CNPs stay flat",
                        "congestion counters at a window's start and end (congestion)",
                        "PFC pauses rising while ECN marks and CNPs stay flat means congestion is left to PFC alone"},
                       PauseWithoutEcn, NoCongestionWindow};

}  // namespace roced::diagnose
