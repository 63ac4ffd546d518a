// bench/mesh_sim: the fleet mesh at a scale no lab holds, over the real
// pinglist code (lib/mesh/pinglist), not a model of it.
//
// A fleet of --hosts hosts, --per-tor per ToR, in --pods pods. Every agent
// computes its own pinglist from the same membership, as it would on its
// node; the union is then checked and measured:
//   - peers per agent (min / mean / max), and how many the bound cut;
//   - ToR-pair coverage: ordered ToR pairs probed by at least one host
//     pair, and by at least `probers_per_tor_pair` distinct ones;
//   - probes per second per agent at the default rates (10/s to
//     each peer under the ToR, 1/s to each peer across);
//   - one host leaving: pinglist entries changed fleet-wide, against the
//     entries it was in;
//   - the worst single host down: ToR pairs left with no probe.
// Then faults, over the real localizer (lib/mesh/localize): every agent's
// windows are drawn at the default rates (10/s under the ToR, 1/s across)
// with probes rotated over six classes (64 B, 1 KiB and 4 KiB, each at
// DSCP 26 and at DSCP 0) and spread evenly over --spines ECMP paths, each probe a
// round trip lost with the chance its path gives (a background loss per
// probe, and the faults on the path). The fault kinds: a dead RNIC, an
// RNIC losing 1% each way, a ToR down, 0.1% loss each way on one ToR's
// uplink to one spine, one spine dropping frames over 1 KiB, one spine
// dropping DSCP 26. Each kind is placed at random --trials times, alone,
// and then three of different kinds at once:
//   - time to detection: the shortest window (1, 2, 5, 10, 20, 30 s) in
//     which the fault's own component is named;
//   - precision and recall over --seconds windows: suspects that name an
//     injected fault (kind, component, class) over all suspects, and
//     faults named over faults injected.
// Goals: 100% ToR-pair coverage with at most 1,000 peers per
// agent; detection within 10 s; precision >= 0.98, recall >= 0.99.
//
//   build/bin/roced_mesh_sim [--hosts 10000] [--per-tor 32] [--pods 8]
//                            [--k 5] [--max-peers 1000] [--trials 10]
//                            [--seconds 30] [--spines 4] [--bg-loss 1e-5]
//                            [--baseline 1e-5] [--seed 1] [-o json]
//                            [--view agents|prometheus]
// --view prometheus localizes what a Prometheus server keeps of the same
// probes: across ToRs the far end is its ToR only (one stand-in member per
// ToR, mesh::TorStandIn), as `rocectl mesh --prometheus` sees them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "mesh/localize.h"
#include "mesh/pinglist.h"
#include "model/defaults.h"

namespace {

using roced::mesh::Member;
using roced::mesh::PeerScope;
using roced::mesh::Pinglist;
using roced::mesh::PinglistOptions;

struct Args {
  int hosts = 10000;
  int per_tor = 32;
  int pods = 8;
  uint32_t k = 5;  // PinglistOptions' default
  size_t max_peers = 1000;
  int trials = 10;
  int seconds = 30;
  int spines = 4;
  double bg_loss = 1e-5;
  double baseline = 1e-5;
  uint64_t seed = 1;
  bool json = false;
  // "agents": each window names its far host (rocectl mesh --targets);
  // "prometheus": across ToRs only the far ToR (rocectl mesh --prometheus).
  bool prometheus_view = false;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "roced_mesh_sim: %s\n"
               "usage: roced_mesh_sim [--hosts N] [--per-tor N] [--pods N] [--k N] [--max-peers N]\n"
               "                      [--trials N] [--seconds N] [--spines N] [--bg-loss P] [--baseline P]\n"
               "                      [--seed N] [--view agents|prometheus] [-o table|json]\n",
               why);
  std::exit(2);
}

long Number(const char* flag, const char* v, long lo, long hi) {
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < lo || n > hi) {
    Usage(absl::StrCat(flag, ": '", v, "' is not a number in [", lo, ", ", hi, "]").c_str());
  }
  return n;
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (i + 1 >= argc) Usage(absl::StrCat(f, " needs a value").c_str());
    const char* v = argv[++i];
    if (f == "--hosts") {
      a.hosts = static_cast<int>(Number("--hosts", v, 2, 200000));
    } else if (f == "--per-tor") {
      a.per_tor = static_cast<int>(Number("--per-tor", v, 1, 1024));
    } else if (f == "--pods") {
      a.pods = static_cast<int>(Number("--pods", v, 1, 1024));
    } else if (f == "--k") {
      a.k = static_cast<uint32_t>(Number("--k", v, 1, 16));
    } else if (f == "--max-peers") {
      a.max_peers = static_cast<size_t>(Number("--max-peers", v, 1, 10000));
    } else if (f == "--trials") {
      a.trials = static_cast<int>(Number("--trials", v, 0, 1000));
    } else if (f == "--seconds") {
      a.seconds = static_cast<int>(Number("--seconds", v, 1, 3600));
    } else if (f == "--spines") {
      a.spines = static_cast<int>(Number("--spines", v, 1, 64));
    } else if (f == "--seed") {
      a.seed = static_cast<uint64_t>(Number("--seed", v, 0, 1L << 40));
    } else if (f == "--bg-loss" || f == "--baseline") {
      char* end = nullptr;
      const double p = std::strtod(v, &end);
      if (end == v || *end != '\0' || !(p >= 0 && p <= 0.1)) {
        Usage(absl::StrCat(f, ": '", v, "' is not a probability in [0, 0.1]").c_str());
      }
      (f == "--bg-loss" ? a.bg_loss : a.baseline) = p;
    } else if (f == "--view") {
      if (std::strcmp(v, "agents") != 0 && std::strcmp(v, "prometheus") != 0) Usage("--view: agents or prometheus");
      a.prometheus_view = std::strcmp(v, "prometheus") == 0;
    } else if (f == "-o") {
      if (std::strcmp(v, "json") != 0 && std::strcmp(v, "table") != 0) Usage("-o: table or json");
      a.json = std::strcmp(v, "json") == 0;
    } else {
      Usage(absl::StrCat("unknown flag ", f).c_str());
    }
  }
  return a;
}

std::vector<Member> Fleet(const Args& a) {
  const int tors = (a.hosts + a.per_tor - 1) / a.per_tor;
  const int tors_per_pod = (tors + a.pods - 1) / a.pods;
  std::vector<Member> out;
  out.reserve(static_cast<size_t>(a.hosts));
  for (int h = 0; h < a.hosts; ++h) {
    const int tor = h / a.per_tor;
    const int pod = tor / tors_per_pod;
    out.push_back({absl::StrCat("host-", h), absl::StrCat("10.", h / 65536, ".", h / 256 % 256, ".", h % 256, ":",
                                                       roced::model::defaults::kGrpcPort),
                   absl::StrCat("tor-", tor), absl::StrCat("pod-", pod)});
  }
  return out;
}

struct Result {
  std::map<std::string, Pinglist> lists;
  double seconds = 0;
};

Result ComputeAll(const std::vector<Member>& fleet, const PinglistOptions& options) {
  Result r;
  const auto t0 = std::chrono::steady_clock::now();
  for (const Member& m : fleet) {
    absl::StatusOr<Pinglist> p = roced::mesh::ComputePinglist(m.name, fleet, options);
    if (!p.ok()) {
      std::fprintf(stderr, "roced_mesh_sim: %s: %s\n", m.name.c_str(), std::string(p.status().message()).c_str());
      std::exit(1);
    }
    r.lists.emplace(m.name, std::move(*p));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}


// ---- faults and localization ----------------------------------------------

struct ProbeClass {
  uint32_t size, dscp;
};
// Sizes rotated at RoCE's DSCP and at the default class alike, so that a
// fault of one DSCP does not hide a fault of one size (and back).
constexpr ProbeClass kClasses[] = {{64, 26}, {1024, 26}, {4096, 26}, {64, 0}, {1024, 0}, {4096, 0}};
constexpr int kClassCount = 6;

enum class FaultKind { kDeadRnic, kLossyRnic, kTorDown, kUplinkLoss, kSpineBigDrop, kSpineDscpDrop };
constexpr FaultKind kFaultKinds[] = {FaultKind::kDeadRnic,   FaultKind::kLossyRnic,    FaultKind::kTorDown,
                                     FaultKind::kUplinkLoss, FaultKind::kSpineBigDrop, FaultKind::kSpineDscpDrop};
const char* FaultName(FaultKind k) {
  switch (k) {
    case FaultKind::kDeadRnic:
      return "dead RNIC";
    case FaultKind::kLossyRnic:
      return "RNIC losing 1%";
    case FaultKind::kTorDown:
      return "ToR down";
    case FaultKind::kUplinkLoss:
      return "0.1% loss on one ToR uplink";
    case FaultKind::kSpineBigDrop:
      return "spine drops frames > 1 KiB";
    case FaultKind::kSpineDscpDrop:
      return "spine drops DSCP 26";
  }
  return "?";
}

struct Fault {
  FaultKind kind;
  uint32_t host = 0;  // RNIC faults
  uint32_t tor = 0;   // ToR and uplink faults
  int spine = 0;      // uplink and spine faults
};

// One pinglist entry: prober, target and their ToRs, probes per second.
struct Path {
  uint32_t prober, target;
  uint32_t window_target;  // target, or its ToR's stand-in (--view prometheus)
  uint32_t ptor, ttor;
  uint32_t rate;
};

// The chance a round trip survives the faults on its path through `spine`
// (cross-ToR probes only; 0 otherwise).
double Survival(const std::vector<Fault>& faults, const Path& p, ProbeClass c, int spine) {
  const bool cross = p.ptor != p.ttor;
  double ok = 1;
  for (const Fault& f : faults) {
    switch (f.kind) {
      case FaultKind::kDeadRnic:
        if (p.prober == f.host || p.target == f.host) return 0;
        break;
      case FaultKind::kLossyRnic:
        if (p.prober == f.host || p.target == f.host) ok *= 0.99 * 0.99;
        break;
      case FaultKind::kTorDown:
        if (p.ptor == f.tor || p.ttor == f.tor) return 0;
        break;
      case FaultKind::kUplinkLoss:
        if (cross && spine == f.spine && (p.ptor == f.tor || p.ttor == f.tor)) ok *= 0.999 * 0.999;
        break;
      case FaultKind::kSpineBigDrop:
        if (cross && spine == f.spine && c.size > 1024) return 0;
        break;
      case FaultKind::kSpineDscpDrop:
        if (cross && spine == f.spine && c.dscp == 26) return 0;
        break;
    }
  }
  return ok;
}

// Whether suspect s names fault f.
bool Names(const roced::mesh::Suspect& s, const Fault& f, const roced::mesh::Observations& obs) {
  using roced::mesh::SuspectKind;
  switch (f.kind) {
    case FaultKind::kDeadRnic:
    case FaultKind::kLossyRnic:
      return s.kind == SuspectKind::kHost && s.component == obs.members()[f.host].name && !s.size_bytes && !s.dscp;
    case FaultKind::kTorDown:
      return s.kind == SuspectKind::kTor && s.component == obs.tors()[f.tor] && !s.size_bytes && !s.dscp;
    case FaultKind::kUplinkLoss:
      return s.kind == SuspectKind::kTorUplink && s.component == obs.tors()[f.tor] && !s.size_bytes && !s.dscp;
    case FaultKind::kSpineBigDrop:
      return s.kind == SuspectKind::kFabric && s.size_bytes.has_value() && *s.size_bytes > 1024;
    case FaultKind::kSpineDscpDrop:
      return s.kind == SuspectKind::kFabric && s.dscp.has_value() && *s.dscp == 26;
  }
  return false;
}

class FaultSim {
 public:
  FaultSim(const Args& a, const std::vector<Member>& fleet, const std::map<std::string, Pinglist>& lists)
      : a_(a), fleet_(fleet), rng_(a.seed) {
    std::map<std::string, uint32_t> index, tor_index;
    for (uint32_t i = 0; i < fleet.size(); ++i) {
      index[fleet[i].name] = i;
      auto [it, added] = tor_index.emplace(fleet[i].tor, static_cast<uint32_t>(tor_index.size()));
      tor_of_.push_back(it->second);
    }
    tors_ = static_cast<uint32_t>(tor_index.size());
    members_ = fleet;
    std::vector<uint32_t> stand_in(tors_, UINT32_MAX);
    if (a.prometheus_view) {
      for (uint32_t i = 0; i < fleet.size(); ++i) {
        if (stand_in[tor_of_[i]] != UINT32_MAX) continue;
        stand_in[tor_of_[i]] = static_cast<uint32_t>(members_.size());
        members_.push_back(roced::mesh::TorStandIn(fleet[i].tor, fleet[i].pod));
      }
    }
    for (uint32_t i = 0; i < fleet.size(); ++i) {
      for (const auto& e : lists.at(fleet[i].name).entries) {
        const uint32_t t = index.at(e.peer);
        // The window's target: the far ToR's stand-in in the Prometheus view.
        const uint32_t as = a.prometheus_view && tor_of_[t] != tor_of_[i] ? stand_in[tor_of_[t]] : t;
        paths_.push_back({i, t, as, tor_of_[i], tor_of_[t], e.scope == PeerScope::kSameTor ? 10u : 1u});
      }
    }
  }

  Fault Random(FaultKind kind) {
    Fault f{kind};
    f.host = std::uniform_int_distribution<uint32_t>(0, static_cast<uint32_t>(fleet_.size()) - 1)(rng_);
    f.tor = std::uniform_int_distribution<uint32_t>(0, tors_ - 1)(rng_);
    f.spine = std::uniform_int_distribution<int>(0, a_.spines - 1)(rng_);
    return f;
  }

  // Every agent's windows over `seconds` with `faults` in place.
  roced::mesh::Observations Observe(const std::vector<Fault>& faults, int seconds) {
    roced::mesh::Observations obs(members_);
    for (const Path& p : paths_) {
      // rate x seconds probes rotated over the classes, starting at a
      // class of the path's own: a short window holds fewer than one of
      // each.
      const uint64_t total = uint64_t{p.rate} * static_cast<uint64_t>(seconds);
      const uint64_t classes = kClassCount;
      const uint64_t first = std::uniform_int_distribution<uint64_t>(0, classes - 1)(rng_);
      for (uint64_t ci = 0; ci < classes; ++ci) {
        const ProbeClass& c = kClasses[ci];
        const uint64_t n = total / classes + ((ci + classes - first) % classes < total % classes);
        if (n == 0) continue;
        uint64_t lost = 0;
        // Probes spread evenly over the spines (flow labels rotated); the
        // remainder on spines drawn at random.
        const uint64_t spines = static_cast<uint64_t>(a_.spines);
        const uint64_t first_extra = std::uniform_int_distribution<uint64_t>(0, spines - 1)(rng_);
        for (int s = 0; s < a_.spines; ++s) {
          // n / spines each, and one more on n % spines of them from a
          // random one on.
          const uint64_t k = n / spines + ((static_cast<uint64_t>(s) + spines - first_extra) % spines < n % spines);
          if (k == 0) continue;
          const double survive = (1 - a_.bg_loss) * Survival(faults, p, c, s);
          if (survive >= 1) continue;
          lost += std::binomial_distribution<uint64_t>(k, 1 - survive)(rng_);
        }
        (void)obs.Add(p.prober, p.window_target, c.size, c.dscp, n, lost);
      }
    }
    return obs;
  }

  roced::mesh::Localization Localize(const roced::mesh::Observations& obs) {
    roced::mesh::LocalizeOptions o;
    o.baseline_loss = a_.baseline;
    absl::StatusOr<roced::mesh::Localization> l = roced::mesh::Localize(obs, o);
    if (!l.ok()) {
      std::fprintf(stderr, "roced_mesh_sim: %s\n", std::string(l.status().message()).c_str());
      std::exit(2);
    }
    return *std::move(l);
  }

 private:
  const Args& a_;
  const std::vector<Member>& fleet_;
  std::vector<Member> members_;  // the fleet, then the ToRs' stand-ins in the Prometheus view
  std::mt19937_64 rng_;
  std::vector<uint32_t> tor_of_;
  uint32_t tors_ = 0;
  std::vector<Path> paths_;
};

struct KindResult {
  std::string name;
  int trials = 0;
  std::vector<int> detect_s;  // per trial; -1: not within the longest window
  int suspects = 0, correct = 0, found = 0, injected = 0;
};

struct LocalizationResults {
  std::vector<KindResult> kinds;  // one per fault kind, then "three at once"
  int suspects = 0, correct = 0, found = 0, injected = 0;
  int healthy_trials = 0, healthy_suspects = 0;
  double localize_ms = 0;
  int localize_runs = 0;
};

// Precision and recall figures of one trial with `faults` over a full window.
void Score(FaultSim* sim, const std::vector<Fault>& faults, int seconds, KindResult* r, LocalizationResults* all) {
  const roced::mesh::Observations obs = sim->Observe(faults, seconds);
  const auto t0 = std::chrono::steady_clock::now();
  const roced::mesh::Localization l = sim->Localize(obs);
  all->localize_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ++all->localize_runs;
  for (const auto& s : l.suspects) {
    bool ok = false;
    for (const Fault& f : faults) ok = ok || Names(s, f, obs);
    r->suspects += 1;
    r->correct += ok;
  }
  for (const Fault& f : faults) {
    bool named = false;
    for (const auto& s : l.suspects) named = named || Names(s, f, obs);
    r->found += named;
    r->injected += 1;
    if (!named && getenv("MESH_SIM_VERBOSE") != nullptr) {
      std::string listed;
      for (const Fault& g : faults) {
        absl::StrAppend(&listed, " [", FaultName(g.kind), " host ", obs.members()[g.host].name, " tor ",
                        obs.tors()[g.tor], " spine ", g.spine, "]");
      }
      std::fprintf(stderr, "missed %s among%s; suspects:\n", FaultName(f.kind), listed.c_str());
      for (const auto& s : l.suspects) {
        std::fprintf(stderr, "  %s %s: %s\n", roced::mesh::SuspectKindName(s.kind), s.component.c_str(),
                     s.evidence.c_str());
      }
    }
  }
}

LocalizationResults SimulateFaults(const Args& a, const std::vector<Member>& fleet,
                                   const std::map<std::string, Pinglist>& lists) {
  LocalizationResults out;
  FaultSim sim(a, fleet, lists);
  constexpr int kWindows[] = {1, 2, 5, 10, 20, 30};
  for (FaultKind kind : kFaultKinds) {
    KindResult r;
    r.name = FaultName(kind);
    for (int t = 0; t < a.trials; ++t) {
      const std::vector<Fault> faults = {sim.Random(kind)};
      int detected = -1;
      for (int w : kWindows) {
        if (w > a.seconds) break;
        const roced::mesh::Observations obs = sim.Observe(faults, w);
        const roced::mesh::Localization l = sim.Localize(obs);
        bool named = false;
        for (const auto& s : l.suspects) named = named || Names(s, faults[0], obs);
        if (named) {
          detected = w;
          break;
        }
      }
      r.detect_s.push_back(detected);
      Score(&sim, faults, a.seconds, &r, &out);
      ++r.trials;
    }
    out.kinds.push_back(std::move(r));
  }
  // Three faults of different kinds at once.
  KindResult multi;
  multi.name = "three at once";
  std::mt19937_64 pick_rng(a.seed ^ 0x5eed);
  for (int t = 0; t < a.trials; ++t) {
    std::vector<FaultKind> kinds(std::begin(kFaultKinds), std::end(kFaultKinds));
    std::vector<Fault> faults;
    for (int i = 0; i < 3; ++i) {
      const size_t pick = std::uniform_int_distribution<size_t>(0, kinds.size() - 1)(pick_rng);
      faults.push_back(sim.Random(kinds[pick]));
      kinds.erase(kinds.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    Score(&sim, faults, a.seconds, &multi, &out);
    ++multi.trials;
  }
  out.kinds.push_back(std::move(multi));
  for (const KindResult& r : out.kinds) {
    out.suspects += r.suspects;
    out.correct += r.correct;
    out.found += r.found;
    out.injected += r.injected;
  }
  // No fault: any suspect is a false positive.
  for (int t = 0; t < a.trials; ++t) {
    const roced::mesh::Observations obs = sim.Observe({}, a.seconds);
    out.healthy_suspects += static_cast<int>(sim.Localize(obs).suspects.size());
    ++out.healthy_trials;
  }
  out.suspects += out.healthy_suspects;
  return out;
}

std::string DetectSummary(const std::vector<int>& d) {
  std::vector<int> s = d;
  std::sort(s.begin(), s.end(), [](int x, int y) { return (x < 0 ? 1 << 30 : x) < (y < 0 ? 1 << 30 : y); });
  if (s.empty()) return "-";
  const int missed = static_cast<int>(std::count(s.begin(), s.end(), -1));
  const int median = s[s.size() / 2], worst = s.back();
  return absl::StrCat(median < 0 ? "never" : absl::StrCat(median, " s"), " / ",
                      worst < 0 ? "never" : absl::StrCat(worst, " s"),
                      missed ? absl::StrCat(" (", missed, " missed)") : "");
}


// The pinglists' figures over the fleet.
struct PinglistStats {
  size_t tor_count = 0, ordered_pairs = 0;
  size_t min_peers = SIZE_MAX, max_peers = 0, sum_peers = 0, dropped = 0;
  double sum_rate = 0, max_rate = 0;
  size_t covered = 0, covered_k = 0;  // ordered ToR pairs probed (by >= k probers)
  size_t worst_blind = 0;             // ToR pairs blinded by the worst host down
  std::string gone;                   // the host that leaves
  size_t changed = 0, involved = 0;   // entries changed when it leaves; entries it was in
  double mean_peers = 0, coverage = 0, coverage_k = 0, per_agent_ms = 0;
  bool coverage_goal = false;
};

using TorPairs = std::map<std::pair<std::string, std::string>, std::vector<std::pair<std::string, std::string>>>;

// Peers and rates per agent; the host pairs probing each ordered ToR pair.
TorPairs CountPeers(const std::vector<Member>& fleet, const Result& all, PinglistStats* st) {
  std::map<std::string, std::string> tor_of;
  std::set<std::string> tors;
  for (const Member& m : fleet) {
    tor_of[m.name] = m.tor;
    tors.insert(m.tor);
  }
  TorPairs pairs;
  for (const auto& [name, list] : all.lists) {
    const size_t n = list.entries.size();
    st->min_peers = std::min(st->min_peers, n);
    st->max_peers = std::max(st->max_peers, n);
    st->sum_peers += n;
    st->dropped += list.dropped;
    double rate = 0;
    for (const auto& e : list.entries) {
      rate += e.scope == PeerScope::kSameTor ? 10.0 : 1.0;
      if (e.scope != PeerScope::kSameTor) pairs[{tor_of[name], e.tor}].push_back({name, e.peer});
    }
    st->sum_rate += rate;
    st->max_rate = std::max(st->max_rate, rate);
  }
  st->tor_count = tors.size();
  st->ordered_pairs = st->tor_count * (st->tor_count - 1);
  return pairs;
}

// Coverage, and the worst single host down: ToR pairs whose every host pair
// involves it.
void CountCoverage(const Args& a, const TorPairs& pairs, PinglistStats* st) {
  std::map<std::string, size_t> blinded_by;
  for (const auto& [tp, hosts] : pairs) {
    std::set<std::string> probers, involved;
    for (const auto& [p, t] : hosts) {
      probers.insert(p);
      involved.insert(p);
      involved.insert(t);
    }
    ++st->covered;
    if (probers.size() >= std::min<size_t>(a.k, static_cast<size_t>(a.per_tor))) ++st->covered_k;
    for (const std::string& h : involved) {
      bool all_involve = true;
      for (const auto& [p, t] : hosts) all_involve = all_involve && (p == h || t == h);
      if (all_involve) ++blinded_by[h];
    }
  }
  for (const auto& [h, n] : blinded_by) st->worst_blind = std::max(st->worst_blind, n);
}

// One host leaving (the middle one): entries changed fleet-wide. False when
// a pinglist cannot be computed.
bool CountChurn(const std::vector<Member>& fleet, const Result& all, const PinglistOptions& options,
                PinglistStats* st) {
  st->gone = fleet[fleet.size() / 2].name;
  std::vector<Member> without;
  for (const Member& m : fleet) {
    if (m.name != st->gone) without.push_back(m);
  }
  st->involved = all.lists.at(st->gone).entries.size();
  for (const auto& [name, list] : all.lists) {
    for (const auto& e : list.entries) st->involved += e.peer == st->gone;
  }
  for (const Member& m : without) {
    absl::StatusOr<Pinglist> p = roced::mesh::ComputePinglist(m.name, without, options);
    if (!p.ok()) return false;
    std::set<std::string> was;
    for (const auto& e : all.lists.at(m.name).entries) was.insert(e.peer);
    for (const auto& e : p->entries) st->changed += was.count(e.peer) == 0;
  }
  return true;
}

// The localization figures the goals are judged on.
struct LocalizationSummary {
  double precision = 1, recall = 1;
  int worst_detect = 0;
  bool all_detected = true;
  bool goal = true;
};

LocalizationSummary Summarize(const Args& a, const LocalizationResults& loc) {
  LocalizationSummary sum;
  sum.precision = loc.suspects ? static_cast<double>(loc.correct) / loc.suspects : 1.0;
  sum.recall = loc.injected ? static_cast<double>(loc.found) / loc.injected : 1.0;
  for (const KindResult& r : loc.kinds) {
    for (int d : r.detect_s) {
      sum.all_detected = sum.all_detected && d >= 0;
      sum.worst_detect = std::max(sum.worst_detect, d);
    }
  }
  const bool detect_goal = sum.all_detected && sum.worst_detect <= 10;
  sum.goal = a.trials == 0 || (sum.precision >= 0.98 && sum.recall >= 0.99 && detect_goal);
  return sum;
}

void PrintJson(const Args& a, const PinglistStats& st, const LocalizationResults& loc,
               const LocalizationSummary& sum, size_t agents, bool goal) {
  std::string kinds;
  for (const KindResult& r : loc.kinds) {
    std::string detect;
    for (int d : r.detect_s) absl::StrAppend(&detect, detect.empty() ? "" : ",", d);
    absl::StrAppend(&kinds, kinds.empty() ? "" : ",", "{\"fault\":\"", r.name, "\",\"trials\":", r.trials,
                    ",\"detect_s\":[", detect, "],\"suspects\":", r.suspects, ",\"correct\":", r.correct,
                    ",\"found\":", r.found, ",\"injected\":", r.injected, "}");
  }
  std::printf(
      "{\"hosts\":%d,\"per_tor\":%d,\"pods\":%d,\"tors\":%zu,\"k\":%u,\"max_peers_bound\":%zu,"
      "\"peers_min\":%zu,\"peers_mean\":%.2f,\"peers_max\":%zu,\"dropped\":%zu,"
      "\"probes_per_s_mean\":%.1f,\"probes_per_s_max\":%.1f,\"tor_pairs\":%zu,"
      "\"tor_pair_coverage_pct\":%.3f,\"tor_pair_coverage_k_pct\":%.3f,\"worst_host_down_blinds\":%zu,"
      "\"leave_changed_entries\":%zu,\"leave_involved_entries\":%zu,\"compute_ms_per_agent\":%.3f,"
      "\"localization\":{\"view\":\"%s\",\"trials\":%d,\"seconds\":%d,\"spines\":%d,\"bg_loss\":%g,\"baseline\":%g,"
      "\"precision\":%.4f,\"recall\":%.4f,\"healthy_trials\":%d,\"healthy_suspects\":%d,"
      "\"worst_detect_s\":%d,\"all_detected\":%s,\"localize_ms_mean\":%.1f,\"kinds\":[%s]},"
      "\"goal_met\":%s}\n",
      a.hosts, a.per_tor, a.pods, st.tor_count, a.k, a.max_peers, st.min_peers, st.mean_peers, st.max_peers,
      st.dropped, st.sum_rate / static_cast<double>(agents), st.max_rate, st.ordered_pairs, st.coverage,
      st.coverage_k, st.worst_blind, st.changed, st.involved, st.per_agent_ms,
      a.prometheus_view ? "prometheus" : "agents", a.trials, a.seconds, a.spines, a.bg_loss, a.baseline,
      sum.precision, sum.recall, loc.healthy_trials, loc.healthy_suspects, sum.worst_detect,
      sum.all_detected ? "true" : "false", loc.localize_runs ? loc.localize_ms / loc.localize_runs : 0.0,
      kinds.c_str(), goal ? "true" : "false");
}

void PrintPinglistText(const Args& a, const PinglistStats& st, size_t agents) {
  std::printf("fleet: %d hosts, %d per ToR, %zu ToRs, %d pods; k = %u probers per ToR pair, bound %zu peers\n",
              a.hosts, a.per_tor, st.tor_count, a.pods, a.k, a.max_peers);
  std::printf("%-56s %s\n", "peers per agent (min / mean / max)",
              absl::StrCat(st.min_peers, " / ", absl::StrFormat("%.1f", st.mean_peers), " / ", st.max_peers,
                           st.dropped ? absl::StrCat(" (", st.dropped, " cut by the bound)") : "")
                  .c_str());
  std::printf("%-56s %.1f / %.1f\n", "probes/s per agent at 10/s ToR, 1/s across (mean / max)",
              st.sum_rate / static_cast<double>(agents), st.max_rate);
  std::printf("%-56s %zu of %zu (%.3f%%; goal 100%%)\n", "ordered ToR pairs probed", st.covered, st.ordered_pairs,
              st.coverage);
  std::printf("%-56s %.3f%%\n", absl::StrCat("... by >= ", a.k, " distinct probers").c_str(), st.coverage_k);
  std::printf("%-56s %zu\n", "ToR pairs blinded by the worst host down", st.worst_blind);
  std::printf("%-56s %zu (it was in %zu)\n", absl::StrCat("entries changed when ", st.gone, " leaves").c_str(),
              st.changed, st.involved);
  std::printf("%-56s %.3f ms\n", "pinglist computation per agent", st.per_agent_ms);
  std::printf("coverage goal (100%% of ToR pairs, <= 1,000 peers per agent): %s\n",
              st.coverage_goal ? "met" : "NOT met");
}

void PrintLocalizationText(const Args& a, const LocalizationResults& loc, const LocalizationSummary& sum) {
  std::printf("\nlocalization (%s): %d trials a kind, %d s windows, %d spines, background loss %g, baseline %g\n",
              a.prometheus_view ? "Prometheus's view: far ends across ToRs known by their ToR" : "the agents' view",
              a.trials, a.seconds, a.spines, a.bg_loss, a.baseline);
  std::printf("%-30s %-22s %9s %9s\n", "fault", "detected (median/worst)", "precision", "recall");
  for (const KindResult& r : loc.kinds) {
    std::printf("%-30s %-22s %9s %9s\n", r.name.c_str(), r.detect_s.empty() ? "-" : DetectSummary(r.detect_s).c_str(),
                absl::StrFormat("%d/%d", r.correct, r.suspects).c_str(),
                absl::StrFormat("%d/%d", r.found, r.injected).c_str());
  }
  std::printf("%-30s %-22s %9s\n", "no fault", "-", absl::StrFormat("%d false", loc.healthy_suspects).c_str());
  int single_suspects = loc.healthy_suspects, single_correct = 0, single_found = 0, single_injected = 0;
  for (size_t i = 0; i + 1 < loc.kinds.size(); ++i) {
    single_suspects += loc.kinds[i].suspects;
    single_correct += loc.kinds[i].correct;
    single_found += loc.kinds[i].found;
    single_injected += loc.kinds[i].injected;
  }
  std::printf("one fault at a time: precision %.4f, recall %.4f\n",
              single_suspects ? static_cast<double>(single_correct) / single_suspects : 1.0,
              single_injected ? static_cast<double>(single_found) / single_injected : 1.0);
  std::printf("all trials: precision %.4f (goal 0.98), recall %.4f (goal 0.99), detection within %d s (goal 10 s)%s\n",
              sum.precision, sum.recall, sum.worst_detect, sum.all_detected ? "" : ", some never");
  std::printf("localization per run over the whole fleet's windows: %.0f ms mean\n",
              loc.localize_runs ? loc.localize_ms / loc.localize_runs : 0.0);
  std::printf("localization goals: %s\n", sum.goal ? "met" : "NOT met");
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  const std::vector<Member> fleet = Fleet(a);
  PinglistOptions options;
  options.probers_per_tor_pair = a.k;
  options.max_peers = a.max_peers;
  const Result all = ComputeAll(fleet, options);
  const size_t agents = all.lists.size();

  PinglistStats st;
  CountCoverage(a, CountPeers(fleet, all, &st), &st);
  if (!CountChurn(fleet, all, options, &st)) return 1;
  st.mean_peers = static_cast<double>(st.sum_peers) / static_cast<double>(agents);
  st.coverage = 100.0 * static_cast<double>(st.covered) / static_cast<double>(st.ordered_pairs);
  st.coverage_k = 100.0 * static_cast<double>(st.covered_k) / static_cast<double>(st.ordered_pairs);
  st.per_agent_ms = 1000.0 * all.seconds / static_cast<double>(agents);
  st.coverage_goal = st.covered == st.ordered_pairs && st.max_peers <= 1000;

  LocalizationResults loc;
  if (a.trials > 0) loc = SimulateFaults(a, fleet, all.lists);
  const LocalizationSummary sum = Summarize(a, loc);
  const bool goal = st.coverage_goal && sum.goal;
  if (a.json) {
    PrintJson(a, st, loc, sum, agents, goal);
  } else {
    PrintPinglistText(a, st, agents);
    if (a.trials > 0) PrintLocalizationText(a, loc, sum);
  }
  return goal ? 0 : 1;
}
