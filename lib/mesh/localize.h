// Fault localization for the fleet mesh: from what the agents saw probing
// each other over a window, which component is to blame: an RNIC (or its
// link), the host it sits in (busy, not broken), a ToR, a ToR's uplinks,
// the path between two ToRs, the fabric between ToRs, or the whole fleet;
// whether only one class of traffic (a probe size, a DSCP) suffers; and
// whether the symptom is loss or latency (answers late without loss).
//
// The method is an explain-away search over the topology, scored by
// likelihood ratios against what the fleet itself shows:
//  - Each candidate component has a scope: the probes whose path crosses
//    it. A host: every probe it sent or answered. A ToR: every probe with
//    an end under it. A ToR's uplinks: the probes between one of its hosts
//    and a host under another ToR. A ToR pair: the probes between the two.
//    The fabric: every probe between two ToRs. The fleet: every probe.
//    Each is also taken restricted to one probe size or one DSCP.
//  - A scope is judged against its peers now, scaled by how it fared
//    against them in its history (LocalizeOptions says how), and scores
//    a binomial log-likelihood ratio (nats).
//    Losses concentrated in a small scope score higher than the same
//    losses diluted in a larger one that contains it, so a dead RNIC is
//    named rather than its ToR; a ToR that drops everything outscores
//    each of its hosts, which hold only part of its losses; a scope
//    restricted to a class outscores the unrestricted one only when the
//    losses are confined to that class.
//  - The best candidate above the thresholds becomes a suspect; its
//    scope's probes are set aside (explained), and the search repeats on
//    the rest until nothing significant is left. Several faults at once
//    are found one after another. Loss is searched first, then latency,
//    each over all the windows.
//  - A host marked busy (Observations::MarkHost: its agent's CPU pressure
//    or stalled loop, answers held long) keeps its probes to its own
//    scope: a finding there is of kind "host", and its losses make neither
//    its ToR nor the fabric look bad.
// Ties (equal scopes, as a host's uplinks and the ToR pair in a fleet of
// two ToRs) go to the narrower kind in SuspectKind's order, and to no
// class over a class.
//
// Far ends known only by their ToR: a view built from Prometheus (the
// agents' series across ToRs name the peer's ToR, not the peer) has, per
// far ToR, one member that stands for its hosts (Member::stands_for_tor,
// TorStandIn). It counts in every ToR, uplink, pair, fabric and fleet
// scope like a host under that ToR, but is never a host suspect; a host
// named suspect also explains the windows aimed at its ToR's stand-in
// (they hold its losses as seen from other ToRs, inseparable from its
// neighbours'). A host is then found from what it sent and what its ToR
// mates saw of it, which a dead or lossy RNIC shows either way.
//
// What it cannot tell: which of a ToR's uplinks, or which spine, carries
// a fault (the hosts do not see ECMP's choice of path; the suspect says
// "uplinks" and "fabric", and the flow labels that lost are the lead for a
// traceroute); an RNIC from the host it sits in.
//
// Pure: no I/O, no clock. Observations holds at most kMaxWindows windows
// (each caller-supplied window costs 64 bytes), so what a caller sends
// bounds the memory; Localize's work is linear in the windows times
// (max_suspects + 1) passes. Not thread-safe for concurrent Add; Localize
// only reads.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mesh/pinglist.h"

namespace roced::mesh {

// At most this many windows are kept; Add refuses more.
inline constexpr size_t kMaxWindows = size_t{1} << 24;
// At most this many probes a window (now or in its history): every sum
// over kMaxWindows windows then fits in 64 bits.
inline constexpr uint64_t kMaxProbes = uint64_t{1} << 38;
// Distinct probe sizes and DSCPs that get class-restricted candidates;
// windows of further ones count in the unrestricted scopes only.
inline constexpr size_t kMaxClassValues = 8;

// What one agent saw probing one peer with one class of probe over the
// window: probes sent, lost (no answer within the deadline) and slow
// (answered, but later than the series' slow threshold: several times the
// round trip the series had before the window), and the same counts of the
// series' own history before the window (the agent's learned reference;
// zeros when it has none yet).
struct PathWindow {
  std::string prober;  // Member::name of the agent that probed
  std::string target;  // Member::name of the peer
  uint32_t size_bytes = 0;
  uint32_t dscp = 0;
  uint64_t sent = 0;
  uint64_t lost = 0;  // at most sent
  uint64_t slow = 0;  // at most sent - lost
  uint64_t hist_sent = 0;
  uint64_t hist_lost = 0;  // at most hist_sent
  uint64_t hist_slow = 0;  // at most hist_sent - hist_lost
};

// A member's own state over the window, as its agent (or its probers)
// reported it: why what it sent and answered says more about the host than
// about its RNIC or the network (CPU starved, its agent stalled or
// restarted, answers held long by the responder). Empty: nothing known.
inline constexpr size_t kMaxHostReason = 200;

// The membership indexed once, and the windows to localize over.
class Observations {
 public:
  explicit Observations(std::vector<Member> members);

  // Adds one window. INVALID_ARGUMENT for lost > sent, slow over the
  // answered, counts over kMaxProbes, a DSCP over 63 or a ToR stand-in as
  // the prober;
  // NOT_FOUND for a prober or target that is not a member, or both the
  // same; RESOURCE_EXHAUSTED beyond kMaxWindows. Nothing is kept on error.
  absl::Status Add(const PathWindow& window);
  // The same by index into members() (bench/mesh_sim adds millions).
  absl::Status Add(uint32_t prober, uint32_t target, uint32_t size_bytes, uint32_t dscp, uint64_t sent,
                   uint64_t lost);
  // The same with the slow counts and the history (bench/mesh_sim).
  absl::Status Add(uint32_t prober, uint32_t target, uint32_t size_bytes, uint32_t dscp, uint64_t sent,
                   uint64_t lost, uint64_t slow, uint64_t hist_sent, uint64_t hist_lost, uint64_t hist_slow);

  // Room for this many windows (at most kMaxWindows), ahead of adding them.
  void Reserve(size_t windows) { units_.reserve(std::min(windows, kMaxWindows)); }

  // Marks a member's host as busy over the window, with the reason (cut at
  // kMaxHostReason bytes; a second mark keeps the first reason). Its windows
  // then count in its own scope only, never in a ToR's or the fabric's, and
  // a finding on it is of kind "host", not "rnic". NOT_FOUND for a name
  // that is not a member; INVALID_ARGUMENT for a ToR stand-in or an empty
  // reason.
  absl::Status MarkHost(std::string_view member, std::string_view reason);
  absl::Status MarkHost(uint32_t member, std::string_view reason);
  // The reason a member was marked; empty when it was not.
  const std::string& host_reason(uint32_t member) const { return host_reason_[member]; }

  const std::vector<Member>& members() const { return members_; }
  size_t windows() const { return units_.size(); }
  uint32_t tor_of(uint32_t member) const { return tor_of_[member]; }
  const std::vector<std::string>& tors() const { return tor_names_; }
  // The stand-in of ToR t (index into tors()), if the members have one.
  std::optional<uint32_t> stand_in_of(uint32_t tor) const;
  std::optional<uint32_t> index_of(std::string_view name) const;

  // Internal form, for Localize and TorMatrix.
  struct Unit {
    uint32_t prober, target;
    uint8_t size_class, dscp_class;  // index into sizes()/dscps(), or kNoClass
    uint64_t sent, lost, slow;
    uint64_t hist_sent, hist_lost, hist_slow;
  };
  static constexpr uint8_t kNoClass = 0xff;
  const std::vector<Unit>& units() const { return units_; }
  const std::vector<uint32_t>& sizes() const { return sizes_; }
  const std::vector<uint32_t>& dscps() const { return dscps_; }

 private:
  std::vector<Member> members_;
  absl::flat_hash_map<std::string, uint32_t> index_;
  std::vector<uint32_t> tor_of_;
  std::vector<std::string> host_reason_;  // per member; empty: not marked
  std::vector<std::string> tor_names_;
  absl::flat_hash_map<uint32_t, uint32_t> stand_in_;  // ToR index -> member index
  std::vector<uint32_t> sizes_, dscps_;
  std::vector<Unit> units_;
};

// The member that stands for the hosts under `tor` seen from other ToRs:
// named "<tor>/*", which no node name can be (a DNS name has no '/').
Member TorStandIn(const std::string& tor, const std::string& pod);

// In order of preference when two candidates score the same.
enum class SuspectKind {
  kHost,       // the host itself: CPU starved, its agent stalled or restarted
  kRnic,       // an RNIC or its link to the ToR
  kTorPair,    // the path between two ToRs
  kTor,        // a ToR switch: its hosts' links and its uplinks
  kTorUplink,  // a ToR's uplinks towards the spines
  kFabric,     // paths between ToRs, fleet-wide (a spine, the spine layer)
  kFleet,      // everything (a class dropped everywhere)
};
const char* SuspectKindName(SuspectKind kind);

// What a scope shows: probes lost, or answered late (its round trips'
// tail several times what it was, without loss).
enum class Symptom { kLoss, kLatency };
const char* SymptomName(Symptom symptom);

struct Suspect {
  SuspectKind kind = SuspectKind::kRnic;
  Symptom symptom = Symptom::kLoss;
  // The host or ToR name; "A<->B" for a ToR pair; empty for fabric/fleet.
  std::string component;
  // The class the losses are confined to, when they are.
  std::optional<uint32_t> size_bytes;
  std::optional<uint32_t> dscp;
  // In the scope (and class), when it was chosen. For a latency suspect,
  // `sent` is the probes answered and `lost` those answered late.
  uint64_t sent = 0;
  uint64_t lost = 0;
  double loss_ratio = 0;
  // The rate it was judged against: its peers' times its history factor,
  // or the floor when higher.
  double reference = 0;
  double llr = 0;         // nats, the smaller of the two judgements
  double confidence = 0;  // llr / (llr + min_llr): 0.5 at the threshold
  // How widely the losses spread over the scope's parts: peers (host),
  // hosts (ToR), far ToRs (uplinks, fabric, fleet: ToR pairs), host pairs
  // (ToR pair) that lost at least one probe, of those probed.
  uint32_t parts_lossy = 0;
  uint32_t parts_total = 0;
  std::string evidence;  // one line, for people
  std::string host_reason;  // kind host: what its agent or probers said
};

// Each scope is judged against its peers now: the same kind of scope over
// the fleet (hosts and ToRs against every probe, ToR uplinks and pairs
// against every probe across ToRs), or, restricted to a class, the same
// scope in the classes that fare better; the fleet in one class on its
// probes within ToRs. The fleet and the fabric unrestricted have no peers:
// a rise over all of either is its background moving. The peers' rate
// (or their own history's, when higher) is scaled by the scope's history
// factor: how many times its peers' rate it lost before the window (its
// history's losses against what its peers' history predicts, 1 to 10). A
// link that always lost five times its peers' is held to five times; a
// past fault that hit a scope and its peers alike changes nothing; a
// fault that stood through the history (a dead RNIC) is held to ten
// times, so it stays named. The figures are not tuned to any background
// loss: the same defaults hold from 1e-6 to 1e-3 (bench/mesh_sim --sweep).
struct LocalizeOptions {
  // An optional floor under the reference rate (0: none): a scope losing
  // less than min_ratio times it is never a suspect.
  double baseline_loss = 0;
  // A suspect needs at least this LLR (nats), the smaller of a two-sample
  // test against its peers and the test against its reference (20 is a
  // chance of about 2e-9, small against the thousands of candidates a
  // fleet has) ...
  double min_llr = 20;
  // ... a rate at least this many times the reference ...
  double min_ratio = 2;
  // ... and at least this many probes lost (or slow).
  uint64_t min_lost = 3;
  // Suspects in the network (every kind but host) per symptom; busy hosts
  // are counted apart, up to kMaxBusyHostSuspects.
  size_t max_suspects = 16;
};
// Allowed ranges, checked by Validate (errors name the field): baseline_loss
// 0 or in [kMinBaselineLoss, kMaxBaselineLoss].
inline constexpr double kMinBaselineLoss = 1e-9;
inline constexpr double kMaxBaselineLoss = 0.1;
inline constexpr size_t kMaxSuspectsLimit = 64;
// Busy hosts (kind host) named per symptom at most, besides max_suspects.
inline constexpr size_t kMaxBusyHostSuspects = 64;
absl::Status Validate(const LocalizeOptions& options);

struct Localization {
  std::vector<Suspect> suspects;  // in the order found: most significant first
  uint64_t sent = 0;              // over every window
  uint64_t lost = 0;
  uint64_t slow = 0;
};

// INVALID_ARGUMENT for bad options (naming the field); otherwise the
// suspects of loss, then those of latency, none when every scope is in
// line with its peers and its history.
absl::StatusOr<Localization> Localize(const Observations& observations, const LocalizeOptions& options);

// The ToR-by-ToR matrix `rocectl mesh` shows: per ordered (prober ToR,
// target ToR) with data, probes sent and lost.
struct TorCell {
  uint32_t from = 0, to = 0;  // index into Observations::tors()
  uint64_t sent = 0, lost = 0;
};
std::vector<TorCell> TorMatrix(const Observations& observations);

// The binomial log-likelihood ratio of k losses in n probes at rate k/n
// against rate p (nats; 0 when k/n <= p). Exposed for tests.
double LossLlr(uint64_t k, uint64_t n, double p);
// The two-sample LLR of k of n now against hk of hn before (nats; 0 when
// k/n <= hk/hn or either is empty): one rate for both against one each.
double TwoSampleLlr(uint64_t k, uint64_t n, uint64_t hk, uint64_t hn);

}  // namespace roced::mesh
