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
// DSCP 26 and at DSCP 0) and spread evenly over --spines ECMP paths. Each
// probe is a round trip, lost with the chance its links and the faults
// on its path give, and answered late (the slow count) with the chance
// its hosts' latency tails and the faults give. Every agent also has ten
// minutes of history of the same links without the fault, as the agents
// learn it; no loss rate is given to the localizer (--baseline sets its
// optional floor).
//
// Fault kinds, gray losses being 1% each way or 30 times the background,
// whichever is more: a dead RNIC; a lossy RNIC; a ToR down; one ToR's
// uplink to one spine lossy; one spine dropping frames of 1 KiB and more;
// one spine dropping DSCP 26; a host link flapping (down 2 s in every 10);
// an RNIC answering 10% of round trips 10x late (latency only); one ToR's
// uplink to one spine delaying 30% of DSCP 0 (latency, one class); a host
// starved of CPU (a fifth of its answers dropped, 30% late, its agent
// saying so), which must be named `host`, never its RNIC.
//
// Worlds (--world, or all of them with --sweep over background levels of
// 1e-6, 1e-5, 1e-4 and 1e-3 per link):
//   uniform        every link at the level;
//   varied         each link's loss drawn log-uniform from level/30 to
//                  3.2 x level (two orders of magnitude), each host's
//                  latency tail from 5e-5 to 5e-3;
//   busy-hosts     varied, and 0.2% of hosts overloaded in the background
//                  (named `host` or not at all);
//   sparse-tors    varied, every fourth ToR holding only two hosts;
//   three-at-once  varied, each trial's fault with two of other kinds
//                  under other ToRs.
// Per world: each kind placed at random --trials times, and as many
// trials without a fault:
//   - time to detection: the shortest window (1, 3, 10, 30 s) in which
//     the fault's own component is named;
//   - precision and recall over --seconds windows: suspects that name an
//     injected fault (kind, component, class, symptom) over all suspects,
//     and faults named over faults injected, per kind.
// Goals: 100% ToR-pair coverage with at most 1,000 peers per agent; per
// fault kind in every world precision >= 0.99 and recall >= 0.99; no
// false suspect without a fault; hard faults (dead RNIC, ToR down) within
// 3 s median, every fault within 30 s.
//
//   build/bin/roced_mesh_sim [--hosts 10000] [--per-tor 32] [--pods 8]
//                            [--k 5] [--max-peers 1000] [--trials 10]
//                            [--seconds 30] [--spines 4] [--bg-loss 1e-5]
//                            [--world varied] [--sweep] [--baseline 0]
//                            [--seed 1] [-o json] [--view agents|prometheus]
// --view prometheus localizes what a Prometheus server keeps of the same
// probes: across ToRs the far end is its ToR only (one stand-in member per
// ToR, mesh::TorStandIn), as `rocectl mesh --prometheus` sees them, and no
// history or host state.
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

// The worlds of the sweep. Every world but "uniform" draws each link's
// loss (and each host link's latency tail) over two orders of magnitude.
enum class World { kUniform, kVaried, kBusy, kSparse, kMulti };
constexpr World kWorlds[] = {World::kUniform, World::kVaried, World::kBusy, World::kSparse, World::kMulti};
const char* WorldName(World w) {
  switch (w) {
    case World::kUniform:
      return "uniform";
    case World::kVaried:
      return "varied";
    case World::kBusy:
      return "busy-hosts";
    case World::kSparse:
      return "sparse-tors";
    case World::kMulti:
      return "three-at-once";
  }
  return "?";
}

[[noreturn]] void Usage(const char* why);
World WorldNamed(const char* v) {
  for (World w : kWorlds) {
    if (std::strcmp(v, WorldName(w)) == 0) return w;
  }
  Usage("--world: uniform, varied, busy-hosts, sparse-tors or three-at-once");
}

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
  double baseline = 0;  // the localizer's optional floor; 0: none
  uint64_t seed = 1;
  bool sweep = false;
  World world = World::kVaried;
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
               "                      [--seed N] [--view agents|prometheus] [--world W] [--sweep] [-o table|json]\n",
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
    if (f == "--sweep") {
      a.sweep = true;
      continue;
    }
    if (f == "-h" || f == "--help") {
      std::printf("usage: roced_mesh_sim [--hosts N] [--per-tor N] [--pods N] [--k N] [--max-peers N]\n"
                  "                      [--trials N] [--seconds N] [--spines N] [--bg-loss P] [--baseline P]\n"
                  "                      [--seed N] [--view agents|prometheus] [--world W] [--sweep] [-o table|json]\n"
                  "The fleet mesh simulated over the real pinglist and localizer code: coverage, probe\n"
                  "cost, and per fault kind precision, recall and time to detection against the goals.\n"
                  "Worlds: uniform, varied, busy-hosts, sparse-tors, three-at-once; --sweep runs them\n"
                  "all at background losses 1e-6, 1e-5, 1e-4 and 1e-3 and prints one table.\n"
                  "Exit status: 0 every goal met, 1 a goal missed, 2 bad usage. See bench/mesh_sim.cc.\n");
      std::exit(0);
    }
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
    } else if (f == "--world") {
      a.world = WorldNamed(v);
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

// --hosts hosts, --per-tor a ToR; `sparse`: every fourth ToR holds two.
std::vector<Member> Fleet(const Args& a, bool sparse) {
  std::vector<int> tor_of;
  for (int tor = 0; static_cast<int>(tor_of.size()) < a.hosts; ++tor) {
    const int size = sparse && tor % 4 == 3 ? std::min(2, a.per_tor) : a.per_tor;
    for (int i = 0; i < size && static_cast<int>(tor_of.size()) < a.hosts; ++i) tor_of.push_back(tor);
  }
  const int tors = tor_of.back() + 1;
  const int tors_per_pod = (tors + a.pods - 1) / a.pods;
  std::vector<Member> out;
  out.reserve(static_cast<size_t>(a.hosts));
  for (int h = 0; h < a.hosts; ++h) {
    const int tor = tor_of[static_cast<size_t>(h)];
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

enum class FaultKind {
  kDeadRnic,
  kLossyRnic,
  kTorDown,
  kUplinkLoss,
  kSpineBigDrop,
  kSpineDscpDrop,
  kLinkFlap,
  kSlowRnic,
  kSlowUplinkDscp,
  kBusyHost,
};
constexpr FaultKind kFaultKinds[] = {FaultKind::kDeadRnic,      FaultKind::kLossyRnic,  FaultKind::kTorDown,
                                     FaultKind::kUplinkLoss,    FaultKind::kSpineBigDrop, FaultKind::kSpineDscpDrop,
                                     FaultKind::kLinkFlap,      FaultKind::kSlowRnic,   FaultKind::kSlowUplinkDscp,
                                     FaultKind::kBusyHost};
constexpr int kFaultKindCount = 10;
const char* FaultName(FaultKind k) {
  switch (k) {
    case FaultKind::kDeadRnic:
      return "dead RNIC";
    case FaultKind::kLossyRnic:
      return "lossy RNIC";
    case FaultKind::kTorDown:
      return "ToR down";
    case FaultKind::kUplinkLoss:
      return "lossy ToR uplink";
    case FaultKind::kSpineBigDrop:
      return "spine drops >= 1 KiB";
    case FaultKind::kSpineDscpDrop:
      return "spine drops DSCP 26";
    case FaultKind::kLinkFlap:
      return "host link flapping";
    case FaultKind::kSlowRnic:
      return "slow RNIC (latency)";
    case FaultKind::kSlowUplinkDscp:
      return "slow uplink, DSCP 0";
    case FaultKind::kBusyHost:
      return "host starved of CPU";
  }
  return "?";
}
// Hard faults (everything through them lost) are held to the faster goal.
bool Hard(FaultKind k) { return k == FaultKind::kDeadRnic || k == FaultKind::kTorDown; }

struct Fault {
  FaultKind kind;
  uint32_t host = 0;  // RNIC, link and host faults
  uint32_t tor = 0;   // ToR and uplink faults
  int spine = 0;      // uplink and spine faults
  double phase = 0;   // link flap: where in its 10 s cycle the window starts
};

// Fault sizes: gray losses are 1% each way, or 30 times the background
// level when that is more (a fault the background hides is no fault).
double GrayLoss(double level) { return std::max(0.01, 30 * level); }
constexpr double kFlapPeriodS = 10, kFlapDownS = 2;  // down 2 s in every 10
constexpr double kSlowRnicShare = 0.10;   // of round trips 10x late: p99 x10
constexpr double kSlowUplinkShare = 0.30;  // of DSCP 0 round trips via the port
constexpr double kBusyLost = 0.20, kBusySlow = 0.30;  // answers dropped, late
constexpr double kBusyBackground = 0.002;             // of hosts busy now and then
constexpr int kHistoryS = 600;                        // the agents' learned history

// The share of a window of `seconds` from `phase` that a flapping link is down.
double DownShare(double phase, int seconds) {
  double down = 0;
  const double step = 0.01;
  for (double t = 0; t < seconds; t += step) down += std::fmod(phase + t, kFlapPeriodS) < kFlapDownS ? step : 0;
  return down / seconds;
}

// One pinglist entry: prober, target and their ToRs, probes per second.
struct Path {
  uint32_t prober, target;
  uint32_t window_target;  // target, or its ToR's stand-in (--view prometheus)
  uint32_t ptor, ttor;
  uint32_t rate;
};

// Binomial(n, p), fast for the small p of a healthy path (inversion: one
// uniform, walking the probabilities up from no loss); std's otherwise.
uint64_t Draw(uint64_t n, double p, std::mt19937_64& rng) {
  if (n == 0 || p <= 0) return 0;
  if (p >= 1) return n;
  if (p > 0.02) return std::binomial_distribution<uint64_t>(n, p)(rng);
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  double pmf = std::exp(static_cast<double>(n) * std::log1p(-p)), cdf = pmf;
  const double odds = p / (1 - p);
  uint64_t k = 0;
  while (u > cdf && k < n) {
    pmf *= static_cast<double>(n - k) / static_cast<double>(k + 1) * odds;
    cdf += pmf;
    ++k;
  }
  return k;
}

// Whether suspect s names fault f.
bool Names(const roced::mesh::Suspect& s, const Fault& f, const roced::mesh::Observations& obs) {
  using roced::mesh::SuspectKind;
  using roced::mesh::Symptom;
  const bool loss = s.symptom == Symptom::kLoss, plain = !s.size_bytes && !s.dscp;
  const std::string& host = obs.members()[f.host].name;
  switch (f.kind) {
    case FaultKind::kDeadRnic:
    case FaultKind::kLossyRnic:
    case FaultKind::kLinkFlap:
      return loss && plain && s.kind == SuspectKind::kRnic && s.component == host;
    case FaultKind::kTorDown:
      return loss && plain && s.kind == SuspectKind::kTor && s.component == obs.tors()[f.tor];
    case FaultKind::kUplinkLoss:
      return loss && plain && s.kind == SuspectKind::kTorUplink && s.component == obs.tors()[f.tor];
    case FaultKind::kSpineBigDrop:
      return loss && s.kind == SuspectKind::kFabric && s.size_bytes.has_value() && *s.size_bytes >= 1024;
    case FaultKind::kSpineDscpDrop:
      return loss && s.kind == SuspectKind::kFabric && s.dscp.has_value() && *s.dscp == 26;
    case FaultKind::kSlowRnic:
      return !loss && plain && s.kind == SuspectKind::kRnic && s.component == host;
    case FaultKind::kSlowUplinkDscp:
      // Its class: DSCP 0, or the one size of DSCP 0 left answering when a
      // spine drops the others on the same path.
      return !loss && s.kind == SuspectKind::kTorUplink && s.component == obs.tors()[f.tor] &&
             (s.dscp.has_value() ? *s.dscp == 0 : s.size_bytes.has_value());
    case FaultKind::kBusyHost:
      return s.kind == SuspectKind::kHost && s.component == host;
  }
  return false;
}

// What a world's links lose: per host link (and its latency tail) and per
// ToR uplink to each spine; the hosts busy in the background.
struct Links {
  std::vector<double> host_loss, host_slow, uplink_loss;
  std::vector<uint8_t> busy;
};

class FaultSim {
 public:
  FaultSim(const Args& a, World world, double level, const std::vector<Member>& fleet,
           const std::map<std::string, Pinglist>& lists)
      : a_(a), world_(world), level_(level), fleet_(fleet), rng_(a.seed) {
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
        const uint32_t as = a.prometheus_view && tor_of_[t] != tor_of_[i] ? stand_in[tor_of_[t]] : t;
        paths_.push_back({i, t, as, tor_of_[i], tor_of_[t], e.scope == PeerScope::kSameTor ? 10u : 1u});
      }
    }
    DrawLinks();
    Base();
    // The agents' history (not in Prometheus's series): the same links,
    // no fault, over kHistoryS.
    if (!a.prometheus_view) Run({}, kHistoryS, &hist_);
    // Busy now and then: other hosts than in the history.
    if (world == World::kBusy) {
      std::bernoulli_distribution busy(kBusyBackground);
      for (uint8_t& b : links_.busy) b = busy(rng_);
    }
  }

  Fault Random(FaultKind kind) {
    Fault f{kind};
    f.host = std::uniform_int_distribution<uint32_t>(0, static_cast<uint32_t>(fleet_.size()) - 1)(rng_);
    f.tor = std::uniform_int_distribution<uint32_t>(0, tors_ - 1)(rng_);
    f.spine = std::uniform_int_distribution<int>(0, a_.spines - 1)(rng_);
    f.phase = std::uniform_real_distribution<double>(0, kFlapPeriodS)(rng_);
    return f;
  }

  // Every agent's windows over `seconds` with `faults` in place.
  roced::mesh::Observations Observe(const std::vector<Fault>& faults, int seconds) {
    Counts now;
    Run(faults, seconds, &now);
    roced::mesh::Observations obs(members_);
    obs.Reserve(paths_.size() * kClassCount);
    const bool history = !hist_.sent.empty();
    for (size_t i = 0; i < paths_.size(); ++i) {
      const Path& p = paths_[i];
      for (int c = 0; c < kClassCount; ++c) {
        const size_t at = i * kClassCount + static_cast<size_t>(c);
        if (now.sent[at] == 0 && (!history || hist_.sent[at] == 0)) continue;
        (void)obs.Add(p.prober, p.window_target, kClasses[c].size, kClasses[c].dscp, now.sent[at], now.lost[at],
                      now.slow[at], history ? hist_.sent[at] : 0, history ? hist_.lost[at] : 0,
                      history ? hist_.slow[at] : 0);
      }
    }
    // Busy hosts say so (their agent's CPU pressure and stalls, and the
    // hold their probers measure).
    if (!a_.prometheus_view) {
      for (uint32_t h = 0; h < fleet_.size(); ++h) {
        if (BusyNow(faults, h)) (void)obs.MarkHost(h, "CPU pressure 85% (some avg10)");
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

  bool background_busy(uint32_t h) const { return links_.busy[h] != 0; }
  // Whether two faults touch the same ToR (by their host's or their own).
  bool SharesATor(const Fault& a, const Fault& b) const {
    const uint32_t ta[] = {a.tor, tor_of_[a.host]}, tb[] = {b.tor, tor_of_[b.host]};
    for (uint32_t x : ta) {
      for (uint32_t y : tb) {
        if (x == y) return true;
      }
    }
    return false;
  }
  const std::vector<Member>& fleet() const { return fleet_; }

 private:
  struct Counts {
    std::vector<uint32_t> sent, lost, slow;  // per path and class
  };

  bool BusyNow(const std::vector<Fault>& faults, uint32_t h) const {
    if (links_.busy[h]) return true;
    for (const Fault& f : faults) {
      if (f.kind == FaultKind::kBusyHost && f.host == h) return true;
    }
    return false;
  }

  void DrawLinks() {
    const bool varied = world_ != World::kUniform;
    std::uniform_real_distribution<double> spread(-1.5, 0.5), tail(-1, 1), u(0, 1);
    auto draw = [&](double base) { return varied ? base * std::pow(10.0, spread(rng_)) : base; };
    links_.host_loss.resize(fleet_.size());
    links_.host_slow.resize(fleet_.size());
    links_.busy.assign(fleet_.size(), 0);
    for (size_t h = 0; h < fleet_.size(); ++h) {
      links_.host_loss[h] = draw(level_);
      links_.host_slow[h] = varied ? 5e-4 * std::pow(10.0, tail(rng_)) : 5e-4;
    }
    links_.uplink_loss.resize(static_cast<size_t>(tors_) * static_cast<size_t>(a_.spines));
    for (double& l : links_.uplink_loss) l = draw(level_);
  }

  // The chance a round trip via `spine` survives, and the chance an answer
  // is late, with `faults` in place.
  std::pair<double, double> Fate(const std::vector<Fault>& faults, const Path& p, ProbeClass c, int spine,
                                 int seconds) const {
    const bool cross = p.ptor != p.ttor;
    auto sq = [](double x) { return (1 - x) * (1 - x); };
    double ok = sq(links_.host_loss[p.prober]) * sq(links_.host_loss[p.target]);
    if (cross) {
      ok *= sq(links_.uplink_loss[p.ptor * static_cast<size_t>(a_.spines) + static_cast<size_t>(spine)]) *
            sq(links_.uplink_loss[p.ttor * static_cast<size_t>(a_.spines) + static_cast<size_t>(spine)]);
    }
    double on_time = (1 - links_.host_slow[p.prober]) * (1 - links_.host_slow[p.target]);
    const double gray = GrayLoss(level_);
    auto touches = [&](uint32_t h) { return p.prober == h || p.target == h; };
    auto via = [&](const Fault& f) { return cross && spine == f.spine && (p.ptor == f.tor || p.ttor == f.tor); };
    for (const Fault& f : faults) {
      switch (f.kind) {
        case FaultKind::kDeadRnic:
          if (touches(f.host)) return {0, 0};
          break;
        case FaultKind::kLossyRnic:
          if (touches(f.host)) ok *= sq(gray);
          break;
        case FaultKind::kTorDown:
          if (p.ptor == f.tor || p.ttor == f.tor) return {0, 0};
          break;
        case FaultKind::kUplinkLoss:
          if (via(f)) ok *= sq(gray);
          break;
        case FaultKind::kSpineBigDrop:
          if (cross && spine == f.spine && c.size >= 1024) return {0, 0};
          break;
        case FaultKind::kSpineDscpDrop:
          if (cross && spine == f.spine && c.dscp == 26) return {0, 0};
          break;
        case FaultKind::kLinkFlap:
          if (touches(f.host)) ok *= 1 - DownShare(f.phase, seconds);
          break;
        case FaultKind::kSlowRnic:
          if (touches(f.host)) on_time *= 1 - kSlowRnicShare;
          break;
        case FaultKind::kSlowUplinkDscp:
          if (via(f) && c.dscp == 0) on_time *= 1 - kSlowUplinkShare;
          break;
        case FaultKind::kBusyHost:
          break;
      }
    }
    if (links_.busy[p.prober] || links_.busy[p.target] || BusyFault(faults, p)) {
      ok *= 1 - kBusyLost;
      on_time *= 1 - kBusySlow;
    }
    return {ok, 1 - on_time};
  }
  static bool BusyFault(const std::vector<Fault>& faults, const Path& p) {
    for (const Fault& f : faults) {
      if (f.kind == FaultKind::kBusyHost && (p.prober == f.host || p.target == f.host)) return true;
    }
    return false;
  }
  // Whether any fault (or a busy host) is on this path.
  bool Touches(const std::vector<Fault>& faults, const Path& p) const {
    if (links_.busy[p.prober] || links_.busy[p.target]) return true;
    for (const Fault& f : faults) {
      switch (f.kind) {
        case FaultKind::kTorDown:
          if (p.ptor == f.tor || p.ttor == f.tor) return true;
          break;
        case FaultKind::kUplinkLoss:
        case FaultKind::kSlowUplinkDscp:
          if (p.ptor != p.ttor && (p.ptor == f.tor || p.ttor == f.tor)) return true;
          break;
        case FaultKind::kSpineBigDrop:
        case FaultKind::kSpineDscpDrop:
          if (p.ptor != p.ttor) return true;
          break;
        default:
          if (p.prober == f.host || p.target == f.host) return true;
          break;
      }
    }
    return false;
  }
  // The background fate of every path, the mean over the spines.
  void Base() {
    base_.resize(paths_.size());
    for (size_t i = 0; i < paths_.size(); ++i) {
      const Path& p = paths_[i];
      const int ways = p.ptor == p.ttor ? 1 : a_.spines;
      double ok = 0, late = 0;
      for (int s = 0; s < ways; ++s) {
        auto [o, l] = Fate({}, p, kClasses[0], s, 1);
        ok += o;
        late += l;
      }
      base_[i] = {ok / ways, late / ways};
    }
  }
  // Whether a fault makes this path's fate differ from spine to spine.
  bool PerSpine(const std::vector<Fault>& faults, const Path& p) const {
    if (p.ptor == p.ttor) return false;
    for (const Fault& f : faults) {
      switch (f.kind) {
        case FaultKind::kUplinkLoss:
        case FaultKind::kSlowUplinkDscp:
          if (p.ptor == f.tor || p.ttor == f.tor) return true;
          break;
        case FaultKind::kSpineBigDrop:
        case FaultKind::kSpineDscpDrop:
          return true;
        default:
          break;
      }
    }
    return false;
  }

  // rate x seconds probes a path, rotated over the classes from a class of
  // its own, spread evenly over the spines (flow labels rotated); each
  // lost, or answered late, with the chance its path gives.
  void Run(const std::vector<Fault>& faults, int seconds, Counts* out) {
    const size_t cells = paths_.size() * kClassCount;
    out->sent.assign(cells, 0);
    out->lost.assign(cells, 0);
    out->slow.assign(cells, 0);
    const uint64_t spines = static_cast<uint64_t>(a_.spines);
    for (size_t i = 0; i < paths_.size(); ++i) {
      const Path& p = paths_[i];
      const uint64_t total = uint64_t{p.rate} * static_cast<uint64_t>(seconds);
      const uint64_t first = std::uniform_int_distribution<uint64_t>(0, kClassCount - 1)(rng_);
      const bool per_spine = PerSpine(faults, p);
      const bool touched = Touches(faults, p);
      for (uint64_t ci = 0; ci < kClassCount; ++ci) {
        const uint64_t n = total / kClassCount + ((ci + kClassCount - first) % kClassCount < total % kClassCount);
        if (n == 0) continue;
        const size_t at = i * kClassCount + ci;
        uint64_t lost = 0, slow = 0;
        if (!touched) {
          lost = Draw(n, 1 - base_[i].first, rng_);
          slow = Draw(n - lost, base_[i].second, rng_);
        } else if (!per_spine) {
          // Every spine alike but for the uplinks' background: their mean.
          double ok = 0, late = 0;
          for (int s = 0; s < (p.ptor == p.ttor ? 1 : a_.spines); ++s) {
            auto [o, l] = Fate(faults, p, kClasses[ci], s, seconds);
            ok += o;
            late += l;
          }
          const double ways = p.ptor == p.ttor ? 1 : a_.spines;
          lost = Draw(n, 1 - ok / ways, rng_);
          slow = Draw(n - lost, late / ways, rng_);
        } else {
          // n / spines each, and one more on n % spines of them from a
          // spine drawn at random.
          const uint64_t from = std::uniform_int_distribution<uint64_t>(0, spines - 1)(rng_);
          for (int s = 0; s < a_.spines; ++s) {
            const uint64_t k = n / spines + ((static_cast<uint64_t>(s) + spines - from) % spines < n % spines);
            auto [o, l] = Fate(faults, p, kClasses[ci], s, seconds);
            const uint64_t kl = Draw(k, 1 - o, rng_);
            lost += kl;
            slow += Draw(k - kl, l, rng_);
          }
        }
        out->sent[at] = static_cast<uint32_t>(n);
        out->lost[at] = static_cast<uint32_t>(lost);
        out->slow[at] = static_cast<uint32_t>(slow);
      }
    }
  }

  const Args& a_;
  World world_;
  double level_;
  const std::vector<Member>& fleet_;
  std::vector<Member> members_;  // the fleet, then the ToRs' stand-ins in the Prometheus view
  std::mt19937_64 rng_;
  std::vector<uint32_t> tor_of_;
  uint32_t tors_ = 0;
  std::vector<Path> paths_;
  Links links_;
  std::vector<std::pair<double, double>> base_;  // per path: survival, late
  Counts hist_;
};

struct KindResult {
  std::string name;
  bool hard = false;
  int trials = 0;
  std::vector<int> detect_s;  // per trial; -1: not within the longest window
  int suspects = 0, correct = 0, found = 0, injected = 0;
};

struct LocalizationResults {
  std::string world;
  double level = 0;
  std::vector<KindResult> kinds;  // one per fault kind
  int suspects = 0, correct = 0, found = 0, injected = 0;
  int healthy_trials = 0, healthy_suspects = 0;
  double localize_ms = 0;
  int localize_runs = 0;
};

// Whether a suspect names one of the faults, or a host busy in the
// background as the host it is.
bool Correct(const roced::mesh::Suspect& s, const std::vector<Fault>& faults, const FaultSim& sim,
             const roced::mesh::Observations& obs) {
  for (const Fault& f : faults) {
    if (Names(s, f, obs)) return true;
  }
  if (s.kind != roced::mesh::SuspectKind::kHost) return false;
  std::optional<uint32_t> h = obs.index_of(s.component);
  return h.has_value() && *h < sim.fleet().size() && sim.background_busy(*h);
}

void Verbose(const char* what, const Fault& f, const std::vector<Fault>& faults,
             const roced::mesh::Observations& obs, const roced::mesh::Localization& l) {
  if (getenv("MESH_SIM_VERBOSE") == nullptr) return;
  std::string listed;
  for (const Fault& g : faults) {
    absl::StrAppend(&listed, " [", FaultName(g.kind), " host ", obs.members()[g.host].name, " tor ",
                    obs.tors()[g.tor], " spine ", g.spine, "]");
  }
  std::fprintf(stderr, "%s %s among%s; suspects:\n", what, FaultName(f.kind), listed.c_str());
  for (const auto& s : l.suspects) {
    std::fprintf(stderr, "  %s/%s %s: %s\n", roced::mesh::SuspectKindName(s.kind), roced::mesh::SymptomName(s.symptom),
                 s.component.c_str(), s.evidence.c_str());
  }
}

// Precision and recall figures of one trial with `faults` over a full
// window; the suspects count against kind r (the trial's).
// Returns whether the first fault was named.
bool Score(FaultSim* sim, const std::vector<Fault>& faults, int seconds, std::vector<KindResult>* kinds,
           KindResult* r, LocalizationResults* all) {
  const roced::mesh::Observations obs = sim->Observe(faults, seconds);
  const auto t0 = std::chrono::steady_clock::now();
  const roced::mesh::Localization l = sim->Localize(obs);
  all->localize_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ++all->localize_runs;
  for (const auto& s : l.suspects) {
    const bool ok = Correct(s, faults, *sim, obs);
    r->suspects += 1;
    r->correct += ok;
    if (!ok && !faults.empty()) Verbose("false suspect with", faults[0], faults, obs, l);
  }
  for (const Fault& f : faults) {
    bool named = false;
    for (const auto& s : l.suspects) named = named || Names(s, f, obs);
    KindResult& k = (*kinds)[static_cast<size_t>(f.kind)];
    k.found += named;
    k.injected += 1;
    if (!named) Verbose("missed", f, faults, obs, l);
  }
  bool first = false;
  for (const auto& s : l.suspects) first = first || (!faults.empty() && Names(s, faults[0], obs));
  return first;
}

// The shortest window in which fault f is named, of 1, 3 and 10 s (0: not
// in those; the full window's run decides).
int DetectionTime(FaultSim* sim, const std::vector<Fault>& faults, int longest) {
  constexpr int kWindows[] = {1, 3, 10};
  for (int w : kWindows) {
    if (w >= longest) break;
    const roced::mesh::Observations obs = sim->Observe(faults, w);
    const roced::mesh::Localization l = sim->Localize(obs);
    for (const auto& s : l.suspects) {
      if (Names(s, faults[0], obs)) return w;
    }
  }
  return 0;
}

LocalizationResults SimulateWorld(const Args& a, World world, double level, const std::vector<Member>& fleet,
                                  const std::map<std::string, Pinglist>& lists) {
  LocalizationResults out;
  out.world = WorldName(world);
  out.level = level;
  FaultSim sim(a, world, level, fleet, lists);
  for (FaultKind kind : kFaultKinds) {
    KindResult r;
    r.name = FaultName(kind);
    r.hard = Hard(kind);
    out.kinds.push_back(std::move(r));
  }
  std::mt19937_64 pick_rng(a.seed ^ 0x5eed);
  for (FaultKind kind : kFaultKinds) {
    KindResult& r = out.kinds[static_cast<size_t>(kind)];
    for (int t = 0; t < a.trials; ++t) {
      std::vector<Fault> faults = {sim.Random(kind)};
      // Three at once: two more of other kinds, under other ToRs (a ToR
      // down hides what else is wrong under it).
      while (world == World::kMulti && faults.size() < 3) {
        const FaultKind other = kFaultKinds[std::uniform_int_distribution<int>(0, kFaultKindCount - 1)(pick_rng)];
        const Fault g = sim.Random(other);
        bool clash = false;
        for (const Fault& f : faults) clash = clash || f.kind == other || sim.SharesATor(f, g);
        if (!clash) faults.push_back(g);
      }
      const int detected = DetectionTime(&sim, faults, a.seconds);
      const bool named = Score(&sim, faults, a.seconds, &out.kinds, &r, &out);
      r.detect_s.push_back(detected > 0 ? detected : named ? a.seconds : -1);
      ++r.trials;
    }
  }
  for (const KindResult& r : out.kinds) {
    out.suspects += r.suspects;
    out.correct += r.correct;
    out.found += r.found;
    out.injected += r.injected;
  }
  // No fault: any suspect but a busy host named as such is a false one.
  for (int t = 0; t < a.trials; ++t) {
    const roced::mesh::Observations obs = sim.Observe({}, a.seconds);
    for (const auto& s : sim.Localize(obs).suspects) out.healthy_suspects += !Correct(s, {}, sim, obs);
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

// The localization figures the goals are judged on, per (level, world):
// the worst fault kind's precision and recall, the hard faults' median
// detection time, the slowest detection of any fault.
struct LocalizationSummary {
  double precision = 1, recall = 1;  // the worst kind's
  std::string worst_kind;
  int hard_median = 0, worst_detect = 0;
  bool all_detected = true;
  bool goal = true;
};
constexpr double kGoalPrecision = 0.99, kGoalRecall = 0.99;
constexpr int kGoalHardS = 3, kGoalGrayS = 30;

int MedianOf(std::vector<int> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end(), [](int x, int y) { return (x < 0 ? 1 << 30 : x) < (y < 0 ? 1 << 30 : y); });
  return v[v.size() / 2];
}

LocalizationSummary Summarize(const Args& a, const LocalizationResults& loc) {
  LocalizationSummary sum;
  std::vector<int> hard;
  for (const KindResult& r : loc.kinds) {
    if (r.trials == 0) continue;
    const double p = r.suspects ? static_cast<double>(r.correct) / r.suspects : 1.0;
    const double rc = r.injected ? static_cast<double>(r.found) / r.injected : 1.0;
    if (p < sum.precision || rc < sum.recall) sum.worst_kind = r.name;
    sum.precision = std::min(sum.precision, p);
    sum.recall = std::min(sum.recall, rc);
    for (int d : r.detect_s) {
      sum.all_detected = sum.all_detected && d >= 0;
      sum.worst_detect = std::max(sum.worst_detect, d);
      if (r.hard) hard.push_back(d);
    }
  }
  sum.hard_median = MedianOf(hard);
  const bool detect_goal = sum.all_detected && sum.worst_detect <= kGoalGrayS && sum.hard_median >= 0 &&
                           sum.hard_median <= kGoalHardS;
  sum.goal = a.trials == 0 || (sum.precision >= kGoalPrecision && sum.recall >= kGoalRecall && detect_goal &&
                               loc.healthy_suspects == 0);
  return sum;
}

std::string KindsJson(const LocalizationResults& loc) {
  std::string kinds;
  for (const KindResult& r : loc.kinds) {
    std::string detect;
    for (int d : r.detect_s) absl::StrAppend(&detect, detect.empty() ? "" : ",", d);
    absl::StrAppend(&kinds, kinds.empty() ? "" : ",", "{\"fault\":\"", r.name, "\",\"trials\":", r.trials,
                    ",\"detect_s\":[", detect, "],\"suspects\":", r.suspects, ",\"correct\":", r.correct,
                    ",\"found\":", r.found, ",\"injected\":", r.injected, "}");
  }
  return kinds;
}

std::string LocalizationJson(const LocalizationResults& loc, const LocalizationSummary& sum) {
  return absl::StrFormat(
      "{\"world\":\"%s\",\"level\":%g,\"precision\":%.4f,\"recall\":%.4f,\"worst_kind\":\"%s\","
      "\"hard_median_detect_s\":%d,\"worst_detect_s\":%d,\"all_detected\":%s,\"healthy_trials\":%d,"
      "\"healthy_false_suspects\":%d,\"localize_ms_mean\":%.1f,\"goal_met\":%s,\"kinds\":[%s]}",
      loc.world, loc.level, sum.precision, sum.recall, sum.worst_kind, sum.hard_median, sum.worst_detect,
      sum.all_detected ? "true" : "false", loc.healthy_trials, loc.healthy_suspects,
      loc.localize_runs ? loc.localize_ms / loc.localize_runs : 0.0, sum.goal ? "true" : "false", KindsJson(loc));
}

void PrintJson(const Args& a, const PinglistStats& st, const std::vector<LocalizationResults>& runs,
               const std::vector<LocalizationSummary>& sums, size_t agents, bool goal) {
  std::string loc;
  for (size_t i = 0; i < runs.size(); ++i) absl::StrAppend(&loc, i ? "," : "", LocalizationJson(runs[i], sums[i]));
  std::printf(
      "{\"hosts\":%d,\"per_tor\":%d,\"pods\":%d,\"tors\":%zu,\"k\":%u,\"max_peers_bound\":%zu,"
      "\"peers_min\":%zu,\"peers_mean\":%.2f,\"peers_max\":%zu,\"dropped\":%zu,"
      "\"probes_per_s_mean\":%.1f,\"probes_per_s_max\":%.1f,\"tor_pairs\":%zu,"
      "\"tor_pair_coverage_pct\":%.3f,\"tor_pair_coverage_k_pct\":%.3f,\"worst_host_down_blinds\":%zu,"
      "\"leave_changed_entries\":%zu,\"leave_involved_entries\":%zu,\"compute_ms_per_agent\":%.3f,"
      "\"view\":\"%s\",\"trials\":%d,\"seconds\":%d,\"spines\":%d,\"baseline\":%g,"
      "\"localization\":[%s],\"goal_met\":%s}\n",
      a.hosts, a.per_tor, a.pods, st.tor_count, a.k, a.max_peers, st.min_peers, st.mean_peers, st.max_peers,
      st.dropped, st.sum_rate / static_cast<double>(agents), st.max_rate, st.ordered_pairs, st.coverage,
      st.coverage_k, st.worst_blind, st.changed, st.involved, st.per_agent_ms,
      a.prometheus_view ? "prometheus" : "agents", a.trials, a.seconds, a.spines, a.baseline, loc.c_str(),
      goal ? "true" : "false");
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

std::string DetectCell(const KindResult& r) { return r.detect_s.empty() ? "-" : DetectSummary(r.detect_s); }

// One world at one level, kind by kind.
void PrintLocalizationText(const Args& a, const LocalizationResults& loc, const LocalizationSummary& sum) {
  std::printf("\nlocalization (%s), world %s at background %g: %d trials a kind, %d s windows, %d spines\n",
              a.prometheus_view ? "Prometheus's view: far ends across ToRs known by their ToR" : "the agents' view",
              loc.world.c_str(), loc.level, a.trials, a.seconds, a.spines);
  std::printf("%-24s %-22s %9s %9s\n", "fault", "detected (median/worst)", "precision", "recall");
  for (const KindResult& r : loc.kinds) {
    std::printf("%-24s %-22s %9s %9s\n", r.name.c_str(), DetectCell(r).c_str(),
                absl::StrFormat("%d/%d", r.correct, r.suspects).c_str(),
                absl::StrFormat("%d/%d", r.found, r.injected).c_str());
  }
  std::printf("%-24s %-22s %9s\n", "no fault", "-", absl::StrFormat("%d false", loc.healthy_suspects).c_str());
  std::printf("worst kind: precision %.4f, recall %.4f (goals %.2f, %.2f); hard faults detected in %d s median "
              "(goal %d s); every fault within %d s%s (goal %d s)\n",
              sum.precision, sum.recall, kGoalPrecision, kGoalRecall, sum.hard_median, kGoalHardS, sum.worst_detect,
              sum.all_detected ? "" : ", some never", kGoalGrayS);
  std::printf("localization per run over the whole fleet's windows: %.0f ms mean\n",
              loc.localize_runs ? loc.localize_ms / loc.localize_runs : 0.0);
  std::printf("localization goals: %s\n", sum.goal ? "met" : "NOT met");
}

// The sweep: one row per (level, world).
void PrintSweep(const Args& a, const PinglistStats& st, size_t agents, const std::vector<LocalizationResults>& runs,
                const std::vector<LocalizationSummary>& sums) {
  std::printf("\nsweep: %d hosts, %d trials per fault kind and world, %d s windows, %d spines; probes/s per agent "
              "%.1f mean, %.1f max\n",
              a.hosts, a.trials, a.seconds, a.spines, st.sum_rate / static_cast<double>(agents), st.max_rate);
  std::printf("goals: precision >= %.2f and recall >= %.2f for every fault kind, 0 false suspects without a "
              "fault, hard faults within %d s median, every fault within %d s\n",
              kGoalPrecision, kGoalRecall, kGoalHardS, kGoalGrayS);
  std::printf("%-9s %-14s %9s %9s %-20s %10s %10s %9s  %s\n", "level", "world", "precision", "recall",
              "(worst kind)", "hard med", "worst det", "no-fault", "goal");
  for (size_t i = 0; i < runs.size(); ++i) {
    const LocalizationSummary& s = sums[i];
    std::printf("%-9g %-14s %9.4f %9.4f %-20s %9ds %9ds%s %9d  %s\n", runs[i].level, runs[i].world.c_str(),
                s.precision, s.recall, s.worst_kind.empty() ? "-" : s.worst_kind.substr(0, 20).c_str(),
                s.hard_median, s.worst_detect, s.all_detected ? " " : "!", runs[i].healthy_suspects,
                s.goal ? "met" : "NOT met");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  const std::vector<Member> fleet = Fleet(a, false);
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

  std::vector<LocalizationResults> runs;
  std::vector<LocalizationSummary> sums;
  if (a.trials > 0) {
    std::vector<double> levels = a.sweep ? std::vector<double>{1e-6, 1e-5, 1e-4, 1e-3} : std::vector<double>{a.bg_loss};
    std::vector<World> worlds = a.sweep ? std::vector<World>(std::begin(kWorlds), std::end(kWorlds))
                                        : std::vector<World>{a.world};
    // The sparse world has its own fleet: every fourth ToR holds two hosts.
    std::optional<std::vector<Member>> sparse;
    std::optional<Result> sparse_lists;
    for (World w : worlds) {
      if (w == World::kSparse && !sparse.has_value()) {
        sparse = Fleet(a, true);
        sparse_lists = ComputeAll(*sparse, options);
      }
      for (double level : levels) {
        const bool sp = w == World::kSparse;
        runs.push_back(SimulateWorld(a, w, level, sp ? *sparse : fleet, sp ? sparse_lists->lists : all.lists));
        sums.push_back(Summarize(a, runs.back()));
        if (a.sweep && !a.json) {
          std::fprintf(stderr, "%s at %g: %s\n", runs.back().world.c_str(), level, sums.back().goal ? "met" : "NOT met");
        }
      }
    }
  }
  bool goal = st.coverage_goal;
  for (const LocalizationSummary& s : sums) goal = goal && s.goal;
  if (a.json) {
    PrintJson(a, st, runs, sums, agents, goal);
  } else {
    PrintPinglistText(a, st, agents);
    if (a.sweep) {
      PrintSweep(a, st, agents, runs, sums);
    } else {
      for (size_t i = 0; i < runs.size(); ++i) PrintLocalizationText(a, runs[i], sums[i]);
    }
    std::printf("all goals: %s\n", goal ? "met" : "NOT met");
  }
  return goal ? 0 : 1;
}
