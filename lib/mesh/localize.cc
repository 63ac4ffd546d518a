#include "mesh/localize.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace roced::mesh {
namespace {

// Index of `value` in `classes`, adding it while there is room; kNoClass
// beyond kMaxClassValues.
uint8_t ClassOf(std::vector<uint32_t>* classes, uint32_t value) {
  auto it = std::find(classes->begin(), classes->end(), value);
  if (it != classes->end()) return static_cast<uint8_t>(it - classes->begin());
  if (classes->size() >= kMaxClassValues) return Observations::kNoClass;
  classes->push_back(value);
  return static_cast<uint8_t>(classes->size() - 1);
}

struct Counts {
  uint64_t sent = 0, lost = 0;
};

uint64_t PairKey(uint32_t a, uint32_t b) {
  if (a > b) std::swap(a, b);
  return (uint64_t{a} << 32) | b;
}

// The aggregates of one pass: per scope, per filter (0: every class;
// 1..S: one size; S+1..S+D: one DSCP).
class Aggregates {
 public:
  Aggregates(const Observations& obs, const absl::flat_hash_map<uint64_t, uint32_t>& pair_index)
      : obs_(obs),
        pair_index_(pair_index),
        filters_(1 + obs.sizes().size() + obs.dscps().size()),
        host_(obs.members().size() * filters_),
        tor_(obs.tors().size() * filters_),
        uplink_(obs.tors().size() * filters_),
        pair_(pair_index.size() * filters_),
        fabric_(filters_),
        fleet_(filters_) {}

  void Add(const Observations::Unit& u) {
    size_t fs[3];
    size_t nf = 0;
    fs[nf++] = 0;
    if (u.size_class != Observations::kNoClass) fs[nf++] = 1 + u.size_class;
    if (u.dscp_class != Observations::kNoClass) fs[nf++] = 1 + obs_.sizes().size() + u.dscp_class;
    const uint32_t tp = obs_.tor_of(u.prober), tt = obs_.tor_of(u.target);
    const bool cross = tp != tt;
    const uint32_t pair = cross ? pair_index_.at(PairKey(tp, tt)) : 0;
    for (size_t i = 0; i < nf; ++i) {
      const size_t f = fs[i];
      Bump(&host_[u.prober * filters_ + f], u);
      Bump(&host_[u.target * filters_ + f], u);
      Bump(&tor_[tp * filters_ + f], u);
      Bump(&fleet_[f], u);
      if (!cross) continue;
      Bump(&tor_[tt * filters_ + f], u);
      Bump(&uplink_[tp * filters_ + f], u);
      Bump(&uplink_[tt * filters_ + f], u);
      Bump(&pair_[pair * filters_ + f], u);
      Bump(&fabric_[f], u);
    }
  }

  size_t filters() const { return filters_; }
  const Observations& obs() const { return obs_; }
  // Counts of scope `index` of `kind` under filter f.
  const Counts& At(SuspectKind kind, size_t index, size_t f) const {
    switch (kind) {
      case SuspectKind::kHost:
        return host_[index * filters_ + f];
      case SuspectKind::kTorPair:
        return pair_[index * filters_ + f];
      case SuspectKind::kTor:
        return tor_[index * filters_ + f];
      case SuspectKind::kTorUplink:
        return uplink_[index * filters_ + f];
      case SuspectKind::kFabric:
        return fabric_[f];
      case SuspectKind::kFleet:
        break;
    }
    return fleet_[f];
  }
  size_t Scopes(SuspectKind kind) const {
    switch (kind) {
      case SuspectKind::kHost:
        return obs_.members().size();
      case SuspectKind::kTorPair:
        return pair_index_.size();
      case SuspectKind::kTor:
      case SuspectKind::kTorUplink:
        return obs_.tors().size();
      case SuspectKind::kFabric:
      case SuspectKind::kFleet:
        break;
    }
    return 1;
  }

 private:
  static void Bump(Counts* c, const Observations::Unit& u) {
    c->sent += u.sent;
    c->lost += u.lost;
  }

  const Observations& obs_;
  const absl::flat_hash_map<uint64_t, uint32_t>& pair_index_;
  size_t filters_;
  std::vector<Counts> host_, tor_, uplink_, pair_;
  std::vector<Counts> fabric_, fleet_;
};

constexpr SuspectKind kKinds[] = {SuspectKind::kHost,      SuspectKind::kTorPair, SuspectKind::kTor,
                                  SuspectKind::kTorUplink, SuspectKind::kFabric,  SuspectKind::kFleet};

struct Choice {
  SuspectKind kind = SuspectKind::kHost;
  size_t index = 0;
  size_t filter = 0;
  double llr = 0;
  Counts counts;
};

// Whether unit u is in the scope (kind, index) under filter f.
bool InScope(const Observations& obs, const std::vector<uint64_t>& pair_keys, const Observations::Unit& u,
             const Choice& c) {
  const size_t sizes = obs.sizes().size();
  if (c.filter != 0) {
    if (c.filter <= sizes) {
      if (u.size_class != c.filter - 1) return false;
    } else if (u.dscp_class != c.filter - 1 - sizes) {
      return false;
    }
  }
  const uint32_t tp = obs.tor_of(u.prober), tt = obs.tor_of(u.target);
  switch (c.kind) {
    case SuspectKind::kHost:
      return u.prober == c.index || u.target == c.index;
    case SuspectKind::kTorPair:
      return tp != tt && PairKey(tp, tt) == pair_keys[c.index];
    case SuspectKind::kTor:
      return tp == c.index || tt == c.index;
    case SuspectKind::kTorUplink:
      return tp != tt && (tp == c.index || tt == c.index);
    case SuspectKind::kFabric:
      return tp != tt;
    case SuspectKind::kFleet:
      break;
  }
  return true;
}

// The parts of a scope a unit belongs to, for the spread figures: the
// peer (host), the host under the ToR (ToR), the far ToR (uplinks), the
// host pair (ToR pair), the ToR pair (fabric, fleet).
void PartsOf(const Observations& obs, const Observations::Unit& u, const Choice& c, uint64_t out[2], size_t* n) {
  const uint32_t tp = obs.tor_of(u.prober), tt = obs.tor_of(u.target);
  *n = 0;
  switch (c.kind) {
    case SuspectKind::kHost:
      out[(*n)++] = u.prober == c.index ? u.target : u.prober;
      return;
    case SuspectKind::kTorPair:
      out[(*n)++] = PairKey(u.prober, u.target);
      return;
    case SuspectKind::kTor:
      if (tp == c.index) out[(*n)++] = u.prober;
      if (tt == c.index && !obs.members()[u.target].stands_for_tor) out[(*n)++] = u.target;
      return;
    case SuspectKind::kTorUplink:
      out[(*n)++] = tp == c.index ? tt : tp;
      return;
    case SuspectKind::kFabric:
    case SuspectKind::kFleet:
      break;
  }
  out[(*n)++] = PairKey(tp, tt);
}

const char* PartsName(SuspectKind kind) {
  switch (kind) {
    case SuspectKind::kHost:
      return "peers";
    case SuspectKind::kTorPair:
      return "host pairs";
    case SuspectKind::kTor:
      return "hosts";
    case SuspectKind::kTorUplink:
      return "far ToRs";
    case SuspectKind::kFabric:
    case SuspectKind::kFleet:
      break;
  }
  return "ToR pairs";
}

std::string Percent(double ratio) { return absl::StrFormat("%.3g%%", 100.0 * ratio); }

}  // namespace

Observations::Observations(std::vector<Member> members) : members_(std::move(members)) {
  absl::flat_hash_map<std::string, uint32_t> tor_index;
  tor_of_.reserve(members_.size());
  for (uint32_t i = 0; i < members_.size(); ++i) {
    index_.emplace(members_[i].name, i);  // duplicates: the first one counts
    const std::string tor = TorKey(members_[i]);
    auto [it, added] = tor_index.emplace(tor, static_cast<uint32_t>(tor_names_.size()));
    if (added) tor_names_.push_back(members_[i].tor.empty() ? absl::StrCat("(", members_[i].name, ")") : tor);
    tor_of_.push_back(it->second);
    if (members_[i].stands_for_tor) stand_in_.emplace(it->second, i);
  }
}

std::optional<uint32_t> Observations::stand_in_of(uint32_t tor) const {
  auto it = stand_in_.find(tor);
  if (it == stand_in_.end()) return std::nullopt;
  return it->second;
}

Member TorStandIn(const std::string& tor, const std::string& pod) {
  Member m{absl::StrCat(tor, "/*"), "", tor, pod};
  m.stands_for_tor = true;
  return m;
}

std::optional<uint32_t> Observations::index_of(std::string_view name) const {
  // Debian's Abseil has its own string_view, which the heterogeneous
  // lookup takes.
  auto it = index_.find(absl::string_view(name.data(), name.size()));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

absl::Status Observations::Add(const PathWindow& w) {
  std::optional<uint32_t> p = index_of(w.prober);
  if (!p.has_value()) return absl::NotFoundError(absl::StrCat("prober '", w.prober, "' is not a member"));
  std::optional<uint32_t> t = index_of(w.target);
  if (!t.has_value()) return absl::NotFoundError(absl::StrCat("target '", w.target, "' is not a member"));
  return Add(*p, *t, w.size_bytes, w.dscp, w.sent, w.lost);
}

absl::Status Observations::Add(uint32_t prober, uint32_t target, uint32_t size_bytes, uint32_t dscp,
                               uint64_t sent, uint64_t lost) {
  if (prober >= members_.size() || target >= members_.size()) {
    return absl::NotFoundError(absl::StrCat("member index ", std::max(prober, target), " is beyond the ",
                                            members_.size(), " members"));
  }
  if (members_[prober].name == members_[target].name) {
    return absl::NotFoundError(absl::StrCat("'", members_[prober].name, "' probes itself"));
  }
  if (lost > sent) {
    return absl::InvalidArgumentError(absl::StrCat("lost: ", lost, " is more than sent (", sent, ")"));
  }
  if (members_[prober].stands_for_tor) {
    return absl::InvalidArgumentError(
        absl::StrCat("prober: '", members_[prober].name, "' stands for a ToR's hosts and cannot probe"));
  }
  if (dscp > 63) return absl::InvalidArgumentError(absl::StrCat("dscp: ", dscp, " is not in [0, 63]"));
  if (units_.size() >= kMaxWindows) {
    return absl::ResourceExhaustedError(absl::StrCat("more than ", kMaxWindows, " windows"));
  }
  units_.push_back({prober, target, ClassOf(&sizes_, size_bytes), ClassOf(&dscps_, dscp), sent, lost});
  return absl::OkStatus();
}

const char* SuspectKindName(SuspectKind kind) {
  switch (kind) {
    case SuspectKind::kHost:
      return "host";
    case SuspectKind::kTorPair:
      return "tor_pair";
    case SuspectKind::kTor:
      return "tor";
    case SuspectKind::kTorUplink:
      return "tor_uplinks";
    case SuspectKind::kFabric:
      return "fabric";
    case SuspectKind::kFleet:
      return "fleet";
  }
  return "unknown";
}

absl::Status Validate(const LocalizeOptions& o) {
  if (!(o.baseline_loss >= kMinBaselineLoss && o.baseline_loss <= kMaxBaselineLoss)) {
    return absl::InvalidArgumentError(absl::StrCat("baseline_loss: ", o.baseline_loss, " is not in [",
                                                   kMinBaselineLoss, ", ", kMaxBaselineLoss, "]"));
  }
  if (!(o.min_llr > 0 && o.min_llr <= 1e6)) {
    return absl::InvalidArgumentError(absl::StrCat("min_llr: ", o.min_llr, " is not in (0, 1e6]"));
  }
  if (!(o.min_ratio >= 1 && o.min_ratio <= 1e6)) {
    return absl::InvalidArgumentError(absl::StrCat("min_ratio: ", o.min_ratio, " is not in [1, 1e6]"));
  }
  if (o.max_suspects < 1 || o.max_suspects > kMaxSuspectsLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_suspects: ", o.max_suspects, " is not in [1, ", kMaxSuspectsLimit, "]"));
  }
  return absl::OkStatus();
}

namespace {

// k of n lost at rate k/n against rate p, either side of it (nats).
double TwoSidedLlr(uint64_t k, uint64_t n, double p) {
  if (n == 0) return 0;
  const double kk = static_cast<double>(k), nn = static_cast<double>(n), q = kk / nn;
  double llr = 0;
  if (k > 0) llr += kk * std::log(q / p);
  if (k < n) llr += (nn - kk) * (std::log1p(-q) - std::log1p(-p));
  return llr;
}

}  // namespace

double LossLlr(uint64_t k, uint64_t n, double p) {
  if (n == 0 || k == 0 || static_cast<double>(k) / static_cast<double>(n) <= p) return 0;
  return TwoSidedLlr(k, n, p);
}

namespace {

// A ToR's stand-in is not a host and is never one's suspect.
bool NotACandidate(const Observations& obs, SuspectKind kind, size_t index) {
  return kind == SuspectKind::kHost && obs.members()[index].stands_for_tor;
}

// The candidate with the highest LLR over the thresholds, if any.
std::optional<Choice> PickBest(const Aggregates& agg, const LocalizeOptions& options) {
  const double p0 = options.baseline_loss;
  std::optional<Choice> best;
  for (SuspectKind kind : kKinds) {
    for (size_t index = 0; index < agg.Scopes(kind); ++index) {
      if (NotACandidate(agg.obs(), kind, index)) continue;
      for (size_t f = 0; f < agg.filters(); ++f) {
        const Counts& c = agg.At(kind, index, f);
        if (c.lost < options.min_lost) continue;
        if (static_cast<double>(c.lost) < options.min_ratio * p0 * static_cast<double>(c.sent)) continue;
        const double llr = LossLlr(c.lost, c.sent, p0);
        if (llr < options.min_llr) continue;
        // Strictly better, beyond rounding: the first (narrowest kind, no
        // class) keeps a tie.
        if (best.has_value() && llr <= best->llr * (1 + 1e-9)) continue;
        best = Choice{kind, index, f, llr, c};
      }
    }
  }
  return best;
}

// Whether candidate d's scope lies within candidate c's (and is not c).
bool Within(const Observations& obs, const std::vector<uint64_t>& pair_keys, const Choice& d, const Choice& c) {
  if (d.kind == c.kind && d.index == c.index && d.filter == c.filter) return false;
  if (c.filter != 0 && d.filter != c.filter) return false;
  auto pair_has = [&](size_t pair, size_t tor) {
    return (pair_keys[pair] >> 32) == tor || (pair_keys[pair] & 0xffffffffu) == tor;
  };
  switch (c.kind) {
    case SuspectKind::kFleet:
      return true;
    case SuspectKind::kFabric:
      return d.kind == SuspectKind::kFabric || d.kind == SuspectKind::kTorUplink || d.kind == SuspectKind::kTorPair;
    case SuspectKind::kTor:
      return (d.kind == SuspectKind::kTor && d.index == c.index) ||
             (d.kind == SuspectKind::kHost && obs.tor_of(static_cast<uint32_t>(d.index)) == c.index) ||
             (d.kind == SuspectKind::kTorUplink && d.index == c.index) ||
             (d.kind == SuspectKind::kTorPair && pair_has(d.index, c.index));
    case SuspectKind::kTorUplink:
      return (d.kind == SuspectKind::kTorUplink && d.index == c.index) ||
             (d.kind == SuspectKind::kTorPair && pair_has(d.index, c.index));
    case SuspectKind::kTorPair:
    case SuspectKind::kHost:
      break;
  }
  return d.kind == c.kind && d.index == c.index;
}

// Several faults at once can make a broad scope score highest: the fleet
// holding a dead ToR and a spine's drops, the fabric holding one spine's
// DSCP drop and another's large-frame drop. Such a scope is a mixture: a
// part of it loses at a clearly higher rate than the rest of the scope
// (kDrillRatio), holds a good share of its losses (kDrillShare), and two
// rates (the part's, the rest's) explain the scope better than one by at
// least min_llr. While one does, the best such part (by LLR) is taken
// instead. A part that only fluctuates above its parent's rate fails the
// last test. The part is weighed against the rest, not the whole, which
// its own losses raise: a lossy host under a ToR of two holds most of its
// ToR's losses, bringing the ToR's rate near its own.
constexpr double kDrillRatio = 1.5;
constexpr double kDrillShare = 0.25;
bool IsMixture(const Counts& part, const Counts& whole, double min_llr) {
  if (part.sent >= whole.sent || part.lost > whole.lost) return false;
  const Counts rest{whole.sent - part.sent, whole.lost - part.lost};
  // A part losing everything passes whatever the rest loses.
  const double rest_rate = static_cast<double>(rest.lost) / static_cast<double>(rest.sent);
  if (static_cast<double>(part.lost) < std::min(1.0, kDrillRatio * rest_rate) * static_cast<double>(part.sent)) {
    return false;
  }
  const double q = static_cast<double>(whole.lost) / static_cast<double>(whole.sent);
  if (q <= 0 || q >= 1) return false;
  const double split = TwoSidedLlr(part.lost, part.sent, q) + TwoSidedLlr(rest.lost, rest.sent, q);
  return split >= min_llr;
}

// Of a scope holding host part d, the units whose far end is known only
// as d's ToR (its stand-in's): d's or its ToR mates', nobody can say. They
// are left out of both sides of d's test, so that what tells a host from
// its ToR is what does: its mates' own probes, clean or not.
Counts WithoutUnassigned(const Aggregates& agg, const Choice& d, Counts whole) {
  if (d.kind != SuspectKind::kHost) return whole;
  const Observations& obs = agg.obs();
  const std::optional<uint32_t> far = obs.stand_in_of(obs.tor_of(static_cast<uint32_t>(d.index)));
  if (!far.has_value()) return whole;
  const Counts& unassigned = agg.At(SuspectKind::kHost, *far, d.filter);
  whole.sent -= std::min(whole.sent, unassigned.sent);
  whole.lost -= std::min(whole.lost, unassigned.lost);
  return whole;
}

Choice DrillDown(const Aggregates& agg, const Observations& obs, const std::vector<uint64_t>& pair_keys,
                 Choice c, const LocalizeOptions& options) {
  while (true) {
    std::optional<Choice> best;
    for (SuspectKind kind : kKinds) {
      for (size_t index = 0; index < agg.Scopes(kind); ++index) {
        if (NotACandidate(obs, kind, index)) continue;
        for (size_t f = 0; f < agg.filters(); ++f) {
          const Counts& n = agg.At(kind, index, f);
          if (n.lost < options.min_lost) continue;
          if (static_cast<double>(n.lost) < kDrillShare * static_cast<double>(c.counts.lost)) continue;
          const Choice d{kind, index, f, LossLlr(n.lost, n.sent, options.baseline_loss), n};
          if (d.llr < options.min_llr || (best.has_value() && d.llr <= best->llr)) continue;
          if (!Within(obs, pair_keys, d, c)) continue;
          if (IsMixture(n, WithoutUnassigned(agg, d, c.counts), options.min_llr)) best = d;
        }
      }
    }
    if (!best.has_value()) return c;
    c = *best;
  }
}

// The suspect for `choice`, its parts' spread counted over `units` before
// they are set aside.
Suspect MakeSuspect(const Observations& obs, const std::vector<uint64_t>& pair_keys, const Choice& choice,
                    const std::vector<Observations::Unit>& units, std::vector<uint8_t>* explained,
                    const LocalizeOptions& options) {
  absl::flat_hash_map<uint64_t, bool> parts;
  // A host's losses seen from other ToRs are in its ToR's stand-in.
  const std::optional<uint32_t> far =
      choice.kind == SuspectKind::kHost ? obs.stand_in_of(obs.tor_of(static_cast<uint32_t>(choice.index)))
                                        : std::nullopt;
  for (size_t i = 0; i < units.size(); ++i) {
    if ((*explained)[i]) continue;
    if (!InScope(obs, pair_keys, units[i], choice)) {
      Choice as_far = choice;
      if (far.has_value()) as_far.index = *far;
      if (far.has_value() && InScope(obs, pair_keys, units[i], as_far)) (*explained)[i] = 1;
      continue;
    }
    (*explained)[i] = 1;
    uint64_t keys[2];
    size_t n = 0;
    PartsOf(obs, units[i], choice, keys, &n);
    for (size_t j = 0; j < n; ++j) parts[keys[j]] |= units[i].lost > 0;
  }
  Suspect s;
  s.kind = choice.kind;
  switch (choice.kind) {
    case SuspectKind::kHost:
      s.component = obs.members()[choice.index].name;
      break;
    case SuspectKind::kTorPair:
      s.component = absl::StrCat(obs.tors()[pair_keys[choice.index] >> 32], "<->",
                                 obs.tors()[pair_keys[choice.index] & 0xffffffffu]);
      break;
    case SuspectKind::kTor:
    case SuspectKind::kTorUplink:
      s.component = obs.tors()[choice.index];
      break;
    case SuspectKind::kFabric:
    case SuspectKind::kFleet:
      break;
  }
  const size_t sizes = obs.sizes().size();
  if (choice.filter >= 1 && choice.filter <= sizes) s.size_bytes = obs.sizes()[choice.filter - 1];
  if (choice.filter > sizes) s.dscp = obs.dscps()[choice.filter - 1 - sizes];
  s.sent = choice.counts.sent;
  s.lost = choice.counts.lost;
  s.loss_ratio = static_cast<double>(s.lost) / static_cast<double>(s.sent);
  s.llr = choice.llr;
  s.confidence = choice.llr / (choice.llr + options.min_llr);
  s.parts_total = static_cast<uint32_t>(parts.size());
  for (const auto& [key, lossy] : parts) s.parts_lossy += lossy;
  std::string cls;
  if (s.size_bytes.has_value()) cls = absl::StrCat(" probes of ", *s.size_bytes, " B");
  if (s.dscp.has_value()) cls = absl::StrCat(" probes with DSCP ", *s.dscp);
  s.evidence = absl::StrCat("lost ", s.lost, " of ", s.sent, cls, " (", Percent(s.loss_ratio), ", baseline ",
                            Percent(options.baseline_loss), ") with ", s.parts_lossy, " of ", s.parts_total, " ",
                            PartsName(s.kind), " losing; LLR ", absl::StrFormat("%.0f", s.llr));
  return s;
}

}  // namespace

absl::StatusOr<Localization> Localize(const Observations& obs, const LocalizeOptions& options) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  Localization out;
  const auto& units = obs.units();
  absl::flat_hash_map<uint64_t, uint32_t> pair_index;
  std::vector<uint64_t> pair_keys;
  for (const auto& u : units) {
    out.sent += u.sent;
    out.lost += u.lost;
    const uint32_t tp = obs.tor_of(u.prober), tt = obs.tor_of(u.target);
    if (tp == tt) continue;
    if (pair_index.emplace(PairKey(tp, tt), static_cast<uint32_t>(pair_keys.size())).second) {
      pair_keys.push_back(PairKey(tp, tt));
    }
  }
  std::vector<uint8_t> explained(units.size(), 0);
  while (out.suspects.size() < options.max_suspects) {
    Aggregates agg(obs, pair_index);
    for (size_t i = 0; i < units.size(); ++i) {
      if (!explained[i]) agg.Add(units[i]);
    }
    std::optional<Choice> best = PickBest(agg, options);
    if (!best.has_value()) break;
    const Choice chosen = DrillDown(agg, obs, pair_keys, *best, options);
    out.suspects.push_back(MakeSuspect(obs, pair_keys, chosen, units, &explained, options));
  }
  return out;
}

std::vector<TorCell> TorMatrix(const Observations& obs) {
  absl::flat_hash_map<uint64_t, size_t> at;
  std::vector<TorCell> cells;
  for (const auto& u : obs.units()) {
    const uint32_t from = obs.tor_of(u.prober), to = obs.tor_of(u.target);
    const uint64_t key = (uint64_t{from} << 32) | to;
    auto [it, added] = at.emplace(key, cells.size());
    if (added) cells.push_back({from, to, 0, 0});
    cells[it->second].sent += u.sent;
    cells[it->second].lost += u.lost;
  }
  std::sort(cells.begin(), cells.end(),
            [](const TorCell& a, const TorCell& b) { return a.from != b.from ? a.from < b.from : a.to < b.to; });
  return cells;
}

}  // namespace roced::mesh
