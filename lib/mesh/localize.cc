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

// A scope's counts for one symptom: now (k of n) and in its history
// (hk of hn). Loss: probes lost of sent. Latency: answered late of answered.
struct Counts {
  uint64_t n = 0, k = 0, hn = 0, hk = 0;
  Counts& operator+=(const Counts& o) {
    n += o.n;
    k += o.k;
    hn += o.hn;
    hk += o.hk;
    return *this;
  }
  Counts operator-(const Counts& o) const {
    auto sub = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
    return {sub(n, o.n), sub(k, o.k), sub(hn, o.hn), sub(hk, o.hk)};
  }
};

Counts UnitCounts(const Observations::Unit& u, Symptom symptom) {
  if (symptom == Symptom::kLoss) return {u.sent, u.lost, u.hist_sent, u.hist_lost};
  return {u.sent - u.lost, u.slow, u.hist_sent - u.hist_lost, u.hist_slow};
}

double Rate(uint64_t k, uint64_t n) { return n == 0 ? 0 : static_cast<double>(k) / static_cast<double>(n); }

// A class is a reference for another only at most 1/kClassBetter its rate.
constexpr double kClassBetter = 2;

uint64_t PairKey(uint32_t a, uint32_t b) {
  if (a > b) std::swap(a, b);
  return (uint64_t{a} << 32) | b;
}

// Whether a unit has an end whose host was marked busy: it then counts in
// that end's own scope only.
bool Busy(const Observations& obs, const Observations::Unit& u) {
  return !obs.host_reason(u.prober).empty() || !obs.host_reason(u.target).empty();
}

// The aggregates of one pass: per scope, per filter (0: every class;
// 1..S: one size; S+1..S+D: one DSCP), and the pools a scope's peers are
// taken from: every probe, and every probe across ToRs, per filter.
class Aggregates {
 public:
  Aggregates(const Observations& obs, const absl::flat_hash_map<uint64_t, uint32_t>& pair_index, Symptom symptom)
      : obs_(obs),
        pair_index_(pair_index),
        symptom_(symptom),
        classes_(1 + obs.sizes().size() + obs.dscps().size()),
        filters_(classes_ + obs.sizes().size() * obs.dscps().size()),
        host_(obs.members().size() * filters_),
        tor_(obs.tors().size() * filters_),
        uplink_(obs.tors().size() * filters_),
        pair_(pair_index.size() * filters_),
        fabric_(filters_),
        fleet_(filters_) {}

  void Add(const Observations::Unit& u) { Bump(u, false); }
  // Takes a unit added before out again.
  void Remove(const Observations::Unit& u) { Bump(u, true); }

 private:
  void Bump(const Observations::Unit& u, bool remove) {
    size_t fs[4];
    size_t nf = 0;
    fs[nf++] = 0;
    if (u.size_class != Observations::kNoClass) fs[nf++] = 1 + u.size_class;
    if (u.dscp_class != Observations::kNoClass) fs[nf++] = 1 + obs_.sizes().size() + u.dscp_class;
    if (nf == 3) fs[nf++] = Cell(u.size_class, u.dscp_class);
    const Counts c = UnitCounts(u, symptom_);
    auto bump = [remove, &c](Counts& to) { to = remove ? to - c : Counts(to) += c; };
    if (Busy(obs_, u)) {
      for (size_t i = 0; i < nf; ++i) {
        if (!obs_.host_reason(u.prober).empty()) bump(host_[u.prober * filters_ + fs[i]]);
        if (!obs_.host_reason(u.target).empty()) bump(host_[u.target * filters_ + fs[i]]);
      }
      bump(busy_);
      return;
    }
    const uint32_t tp = obs_.tor_of(u.prober), tt = obs_.tor_of(u.target);
    const bool cross = tp != tt;
    const uint32_t pair = cross ? pair_index_.at(PairKey(tp, tt)) : 0;
    for (size_t i = 0; i < nf; ++i) {
      const size_t f = fs[i];
      bump(host_[u.prober * filters_ + f]);
      bump(host_[u.target * filters_ + f]);
      bump(tor_[tp * filters_ + f]);
      bump(fleet_[f]);
      if (!cross) continue;
      bump(tor_[tt * filters_ + f]);
      bump(uplink_[tp * filters_ + f]);
      bump(uplink_[tt * filters_ + f]);
      bump(pair_[pair * filters_ + f]);
      bump(fabric_[f]);
    }
  }


 public:
  // The filters a candidate may have: none, one size, one DSCP. Beyond
  // them the (size, DSCP) cells, which only peers are taken from.
  size_t filters() const { return classes_; }
  // The aggregates over every window, explained or not (ClassPeers).
  void SetWhole(const Aggregates* whole) { whole_ = whole; }
  const Observations& obs() const { return obs_; }
  // Counts of scope `index` of `kind` under filter f.
  const Counts& At(SuspectKind kind, size_t index, size_t f) const {
    switch (kind) {
      case SuspectKind::kHost:
      case SuspectKind::kRnic:
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
  // What a candidate is judged on: its counts, but for the fleet in one
  // class, only the probes within ToRs. A class lost across ToRs alone is
  // the fabric's (whose peers are its other classes); the fleet is named
  // for a class only when its probes within ToRs suffer too.
  // Both at once: a class's are one stratified pass (ClassPeers).
  std::pair<Counts, Counts> JudgedAndPeers(SuspectKind kind, size_t index, size_t f) const {
    if (f != 0) return ClassPeers(kind, index, f);
    return {At(kind, index, f), Peers(kind, index)};
  }

  // A class's counts and its peers', stratified by the other dimension:
  // for a DSCP, within each size, against the DSCPs that fare better there
  // (at most half its rate: a class a little better by chance is no
  // reference), and back for a size. The other classes are taken over
  // every window but those an unrestricted suspect explained: once a
  // class's fault is set aside, what is left of that class (the probes
  // within ToRs) is no reference. Two class faults at once (a spine dropping DSCP
  // 26 and frames of 1 KiB) are each judged where the other is not. The
  // strata where no class fares better are left out of both.
  std::pair<Counts, Counts> ClassPeers(SuspectKind kind, size_t index, size_t f) const {
    const size_t sizes = obs_.sizes().size(), dscps = obs_.dscps().size();
    const bool by_size = f <= sizes;
    const size_t mine = by_size ? f - 1 : f - 1 - sizes;
    const size_t strata = by_size ? dscps : sizes, others = by_size ? sizes : dscps;
    std::pair<Counts, Counts> out;
    for (size_t st = 0; st < strata; ++st) {
      auto cell = [&](size_t c) { return by_size ? CellCounts(kind, index, c, st) : CellCounts(kind, index, st, c); };
      const Counts own = cell(mine);
      auto whole_cell = [&](size_t c) {
        const Aggregates& w = whole_ != nullptr ? *whole_ : *this;
        return by_size ? w.CellCounts(kind, index, c, st) : w.CellCounts(kind, index, st, c);
      };
      Counts better;
      for (size_t c = 0; c < others; ++c) {
        const Counts other = whole_cell(c);
        if (c != mine && kClassBetter * Rate(other.k, other.n) < Rate(own.k, own.n)) better += other;
      }
      if (better.n == 0) continue;
      out.first += own;
      out.second += better;
    }
    return out;
  }

  size_t Cell(size_t size_class, size_t dscp_class) const {
    return classes_ + size_class * obs_.dscps().size() + dscp_class;
  }
  // A cell's counts; for the fleet, those within ToRs (see JudgedAndPeers).
  Counts CellCounts(SuspectKind kind, size_t index, size_t size_class, size_t dscp_class) const {
    const size_t f = Cell(size_class, dscp_class);
    if (kind == SuspectKind::kFleet) return fleet_[f] - fabric_[f];
    return At(kind, index, f);
  }

  size_t Scopes(SuspectKind kind) const {
    switch (kind) {
      case SuspectKind::kHost:
      case SuspectKind::kRnic:
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

  // What unrestricted scope (kind, index) is judged against now: the other
  // scopes of its kind (every probe for hosts and ToRs, the probes across
  // ToRs for uplinks and ToR pairs); a class's are ClassPeers'. Empty when
  // it has none (the fleet and the fabric unrestricted are their own peers:
  // a rise over all of either is its background moving).
  Counts Peers(SuspectKind kind, size_t index) const {
    const Counts& own = At(kind, index, 0);
    switch (kind) {
      case SuspectKind::kHost:
      case SuspectKind::kRnic:
        // A busy host is judged against every other probe, the other busy
        // hosts' too (when every host is busy, they are all there is).
        if (!obs_.host_reason(static_cast<uint32_t>(index)).empty()) {
          Counts others = fleet_[0];
          others += busy_ - own;
          return others;
        }
        return fleet_[0] - own;
      case SuspectKind::kTor:
        return fleet_[0] - own;
      case SuspectKind::kTorUplink:
      case SuspectKind::kTorPair: {
        // In a fleet of two ToRs the probes across are all one scope: the
        // rest of the fleet is what it is judged against.
        const Counts cross = fabric_[0] - own;
        return cross.n > 0 ? cross : fleet_[0] - own;
      }
      case SuspectKind::kFabric:
      case SuspectKind::kFleet:
        break;
    }
    return {};
  }

 private:
  const Observations& obs_;
  const absl::flat_hash_map<uint64_t, uint32_t>& pair_index_;
  Symptom symptom_;
  size_t classes_, filters_;
  const Aggregates* whole_ = nullptr;  // over every window, for ClassPeers
  std::vector<Counts> host_, tor_, uplink_, pair_;
  std::vector<Counts> fabric_, fleet_;
  Counts busy_;  // every probe with a busy end, unfiltered
};

// Member scopes are searched as kRnic; one whose host was marked busy is
// reported as kHost.
constexpr SuspectKind kKinds[] = {SuspectKind::kRnic,      SuspectKind::kTorPair, SuspectKind::kTor,
                                  SuspectKind::kTorUplink, SuspectKind::kFabric,  SuspectKind::kFleet};

struct Choice {
  SuspectKind kind = SuspectKind::kRnic;
  size_t index = 0;
  size_t filter = 0;
  double llr = 0;
  double reference = 0;
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
  if (c.kind == SuspectKind::kRnic || c.kind == SuspectKind::kHost) {
    if (u.prober != c.index && u.target != c.index) return false;
    // A busy end's probes count in its own scope only.
    return !Busy(obs, u) || !obs.host_reason(static_cast<uint32_t>(c.index)).empty();
  }
  if (Busy(obs, u)) return false;
  const uint32_t tp = obs.tor_of(u.prober), tt = obs.tor_of(u.target);
  switch (c.kind) {
    case SuspectKind::kTorPair:
      return tp != tt && PairKey(tp, tt) == pair_keys[c.index];
    case SuspectKind::kTor:
      return tp == c.index || tt == c.index;
    case SuspectKind::kTorUplink:
      return tp != tt && (tp == c.index || tt == c.index);
    case SuspectKind::kFabric:
      return tp != tt;
    case SuspectKind::kHost:
    case SuspectKind::kRnic:
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
    case SuspectKind::kRnic:
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
    case SuspectKind::kRnic:
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
  host_reason_.resize(members_.size());
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
  return Add(*p, *t, w.size_bytes, w.dscp, w.sent, w.lost, w.slow, w.hist_sent, w.hist_lost, w.hist_slow);
}

absl::Status Observations::Add(uint32_t prober, uint32_t target, uint32_t size_bytes, uint32_t dscp,
                               uint64_t sent, uint64_t lost) {
  return Add(prober, target, size_bytes, dscp, sent, lost, 0, 0, 0, 0);
}

namespace {

// The counts of one window: lost at most sent, slow at most the answered.
absl::Status CheckCounts(uint64_t sent, uint64_t lost, uint64_t slow, const char* prefix) {
  if (lost > sent) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "lost: ", lost, " is more than ", prefix, "sent (", sent, ")"));
  }
  if (slow > sent - lost) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "slow: ", slow, " is more than the ", sent - lost, " answered"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Observations::Add(uint32_t prober, uint32_t target, uint32_t size_bytes, uint32_t dscp,
                               uint64_t sent, uint64_t lost, uint64_t slow, uint64_t hist_sent,
                               uint64_t hist_lost, uint64_t hist_slow) {
  if (prober >= members_.size() || target >= members_.size()) {
    return absl::NotFoundError(absl::StrCat("member index ", std::max(prober, target), " is beyond the ",
                                            members_.size(), " members"));
  }
  if (members_[prober].name == members_[target].name) {
    return absl::NotFoundError(absl::StrCat("'", members_[prober].name, "' probes itself"));
  }
  if (sent > kMaxProbes || hist_sent > kMaxProbes) {
    return absl::InvalidArgumentError(absl::StrCat(sent > kMaxProbes ? "sent: " : "hist_sent: ",
                                                   std::max(sent, hist_sent), " is more than ", kMaxProbes));
  }
  if (absl::Status s = CheckCounts(sent, lost, slow, ""); !s.ok()) return s;
  if (absl::Status s = CheckCounts(hist_sent, hist_lost, hist_slow, "hist_"); !s.ok()) return s;
  if (members_[prober].stands_for_tor) {
    return absl::InvalidArgumentError(
        absl::StrCat("prober: '", members_[prober].name, "' stands for a ToR's hosts and cannot probe"));
  }
  if (dscp > 63) return absl::InvalidArgumentError(absl::StrCat("dscp: ", dscp, " is not in [0, 63]"));
  if (units_.size() >= kMaxWindows) {
    return absl::ResourceExhaustedError(absl::StrCat("more than ", kMaxWindows, " windows"));
  }
  units_.push_back({prober, target, ClassOf(&sizes_, size_bytes), ClassOf(&dscps_, dscp), sent, lost, slow,
                    hist_sent, hist_lost, hist_slow});
  return absl::OkStatus();
}

absl::Status Observations::MarkHost(std::string_view member, std::string_view reason) {
  std::optional<uint32_t> m = index_of(member);
  if (!m.has_value()) return absl::NotFoundError(absl::StrCat("host '", std::string(member), "' is not a member"));
  return MarkHost(*m, reason);
}

absl::Status Observations::MarkHost(uint32_t member, std::string_view reason) {
  if (member >= members_.size()) {
    return absl::NotFoundError(absl::StrCat("member index ", member, " is beyond the ", members_.size(), " members"));
  }
  if (members_[member].stands_for_tor) {
    return absl::InvalidArgumentError(
        absl::StrCat("host: '", members_[member].name, "' stands for a ToR's hosts, not one host"));
  }
  if (reason.empty()) return absl::InvalidArgumentError("reason: empty; say why the host is busy");
  if (!host_reason_[member].empty()) return absl::OkStatus();
  // Cut on a character's first byte, control characters replaced: the
  // reason goes into reports and terminals.
  size_t end = std::min(reason.size(), kMaxHostReason);
  while (end < reason.size() && end > 0 && (static_cast<unsigned char>(reason[end]) & 0xc0) == 0x80) --end;
  std::string kept(reason.substr(0, end));
  for (char& ch : kept) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
  }
  host_reason_[member] = std::move(kept);
  return absl::OkStatus();
}

const char* SuspectKindName(SuspectKind kind) {
  switch (kind) {
    case SuspectKind::kHost:
      return "host";
    case SuspectKind::kRnic:
      return "rnic";
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

const char* SymptomName(Symptom symptom) { return symptom == Symptom::kLoss ? "loss" : "latency"; }

absl::Status Validate(const LocalizeOptions& o) {
  if (!(o.baseline_loss == 0 || (o.baseline_loss >= kMinBaselineLoss && o.baseline_loss <= kMaxBaselineLoss))) {
    return absl::InvalidArgumentError(absl::StrCat("baseline_loss: ", o.baseline_loss, " is not 0 (none) or in [",
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

// k of n at rate k/n against rate p, either side of it (nats).
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

double TwoSampleLlr(uint64_t k, uint64_t n, uint64_t hk, uint64_t hn) {
  if (n == 0 || hn == 0 || Rate(k, n) <= Rate(hk, hn)) return 0;
  const double q = static_cast<double>(k + hk) / static_cast<double>(n + hn);
  if (q <= 0 || q >= 1) return 0;
  return TwoSidedLlr(k, n, q) + TwoSidedLlr(hk, hn, q);
}

namespace {

// A ToR's stand-in is not a host and is never one's suspect.
bool NotACandidate(const Observations& obs, SuspectKind kind, size_t index) {
  return kind == SuspectKind::kRnic && obs.members()[index].stands_for_tor;
}

constexpr double kMaxHistoryExcuse = 10;
struct Judgement {
  double llr = 0;
  double reference = 0;
};
// How many times its peers' rate a scope has lost in its history: its
// history's losses against what its peers' history rate predicts for as
// many probes (one loss added to both, so that a short history says about
// 1), at least 1 and at most kMaxHistoryExcuse. A past fault that hit the
// scope and its peers alike does not move it; a background of its own
// (a link that always lost five times its peers') does; a fault that
// stood through the history (a dead RNIC) is held to the cap.
double HistoryFactor(const Counts& c, const Counts& peers) {
  if (c.hn == 0 || peers.hn == 0) return 1;
  const double predicted = static_cast<double>(c.hn) * Rate(peers.hk, peers.hn);
  return std::clamp((static_cast<double>(c.hk) + 1) / (predicted + 1), 1.0, kMaxHistoryExcuse);
}

// How far scope (kind, index, f) stands out (LLR, nats) and the rate it
// is judged against: its peers' rate now times its history factor, or the
// floor. The LLR is the smaller of the test against that reference and a
// two-sample test against the peers' counts, now and before together (a
// few peers can be quiet by chance; a past fault in their history alone
// does not raise the reference). Nothing (llr 0) below min_ratio times the
// reference, or without peers.
Judgement Judge(const Aggregates& agg, SuspectKind kind, size_t index, size_t f, const LocalizeOptions& options) {
  const auto [c, peers] = agg.JudgedAndPeers(kind, index, f);
  if (c.k < options.min_lost || peers.n == 0) return {};
  const double peer_rate = std::max(Rate(peers.k, peers.n), 0.5 / static_cast<double>(peers.n + peers.hn));
  const double expected = peer_rate * HistoryFactor(c, peers);
  const double reference = std::max(expected, options.baseline_loss);
  if (Rate(c.k, c.n) < options.min_ratio * reference) return {};
  // The peers' counts are a sample too: a two-sample test against them
  // (now and in their history together) as well.
  const double llr = std::min(TwoSampleLlr(c.k, c.n, peers.k + peers.hk, peers.n + peers.hn),
                              LossLlr(c.k, c.n, reference));
  return {llr, reference};
}

// The candidate with the highest LLR over the thresholds, if any.
std::optional<Choice> PickBest(const Aggregates& agg, const LocalizeOptions& options) {
  std::optional<Choice> best;
  for (SuspectKind kind : kKinds) {
    for (size_t index = 0; index < agg.Scopes(kind); ++index) {
      if (NotACandidate(agg.obs(), kind, index)) continue;
      for (size_t f = 0; f < agg.filters(); ++f) {
        const Counts& c = agg.At(kind, index, f);
        if (c.k < options.min_lost) continue;
        const Judgement j = Judge(agg, kind, index, f, options);
        if (j.llr < options.min_llr) continue;
        // Strictly better, beyond rounding: the first (narrowest kind, no
        // class) keeps a tie.
        if (best.has_value() && j.llr <= best->llr * (1 + 1e-9)) continue;
        best = Choice{kind, index, f, j.llr, j.reference, c};
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
             (d.kind == SuspectKind::kRnic && obs.tor_of(static_cast<uint32_t>(d.index)) == c.index) ||
             (d.kind == SuspectKind::kTorUplink && d.index == c.index) ||
             (d.kind == SuspectKind::kTorPair && pair_has(d.index, c.index));
    case SuspectKind::kTorUplink:
      return (d.kind == SuspectKind::kTorUplink && d.index == c.index) ||
             (d.kind == SuspectKind::kTorPair && pair_has(d.index, c.index));
    case SuspectKind::kTorPair:
    case SuspectKind::kHost:
    case SuspectKind::kRnic:
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
  if (part.n >= whole.n || part.k > whole.k) return false;
  const Counts rest{whole.n - part.n, whole.k - part.k, 0, 0};
  // A part losing everything passes whatever the rest loses.
  if (static_cast<double>(part.k) < std::min(1.0, kDrillRatio * Rate(rest.k, rest.n)) * static_cast<double>(part.n)) {
    return false;
  }
  const double q = Rate(whole.k, whole.n);
  if (q <= 0 || q >= 1) return false;
  const double split = TwoSidedLlr(part.k, part.n, q) + TwoSidedLlr(rest.k, rest.n, q);
  return split >= min_llr;
}

// A ToR's uplinks holding nearly all of its losses (and a suspect in their
// own right), the probes within the ToR clearly better off, explain them
// as well with less: a ToR of two hosts has few probes within it to tell
// the two apart by a mixture's test. (Not further down: which ToR pair an
// uplink's losses fall on is ECMP's choice.)
constexpr double kHoldsAll = 0.9;
bool HoldsAll(const Counts& part, const Counts& whole) {
  if (part.n >= whole.n || static_cast<double>(part.k) < kHoldsAll * static_cast<double>(whole.k)) return false;
  // The rest is clearly better off (a ToR that is down loses its probes
  // within too).
  const Counts rest = whole - part;
  return kDrillRatio * Rate(rest.k, rest.n) <= Rate(part.k, part.n);
}

// Of a scope holding host part d, the units whose far end is known only
// as d's ToR (its stand-in's): d's or its ToR mates', nobody can say. They
// are left out of both sides of d's test, so that what tells a host from
// its ToR is what does: its mates' own probes, clean or not.
Counts WithoutUnassigned(const Aggregates& agg, const Choice& d, Counts whole) {
  if (d.kind != SuspectKind::kRnic) return whole;
  const Observations& obs = agg.obs();
  const std::optional<uint32_t> far = obs.stand_in_of(obs.tor_of(static_cast<uint32_t>(d.index)));
  if (!far.has_value()) return whole;
  return whole - agg.At(SuspectKind::kRnic, *far, d.filter);
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
          if (n.k < options.min_lost) continue;
          if (static_cast<double>(n.k) < kDrillShare * static_cast<double>(c.counts.k)) continue;
          const Judgement j = Judge(agg, kind, index, f, options);
          Choice d{kind, index, f, j.llr, j.reference, n};
          if (!Within(obs, pair_keys, d, c)) continue;
          const Counts whole = WithoutUnassigned(agg, d, c.counts);
          const bool uplinks_holding_all =
              c.kind == SuspectKind::kTor && d.kind == SuspectKind::kTorUplink && HoldsAll(n, whole);
          if (uplinks_holding_all) {
            // Judged against the ToR's own probes within it as well: in a
            // fabric of few ToRs the probes between the other ToRs, the
            // uplinks' peers, are too few to convict them alone.
            const Counts within = whole - n;
            d.llr = std::max(d.llr, TwoSampleLlr(n.k, n.n, within.k, within.n));
          }
          if (d.llr < options.min_llr || (best.has_value() && d.llr <= best->llr)) continue;
          if (IsMixture(n, whole, options.min_llr) || uplinks_holding_all) best = d;
        }
      }
    }
    if (!best.has_value()) return c;
    c = *best;
  }
}

std::string ComponentName(const Observations& obs, const std::vector<uint64_t>& pair_keys, const Choice& choice) {
  switch (choice.kind) {
    case SuspectKind::kHost:
    case SuspectKind::kRnic:
      return obs.members()[choice.index].name;
    case SuspectKind::kTorPair:
      return absl::StrCat(obs.tors()[pair_keys[choice.index] >> 32], "<->",
                          obs.tors()[pair_keys[choice.index] & 0xffffffffu]);
    case SuspectKind::kTor:
    case SuspectKind::kTorUplink:
      return obs.tors()[choice.index];
    case SuspectKind::kFabric:
    case SuspectKind::kFleet:
      break;
  }
  return "";
}

// Sets aside the units of `choice` (and, for a host, those aimed at its
// ToR's stand-in) and counts how widely the symptom spread over its parts.
void Explain(const Observations& obs, const std::vector<uint64_t>& pair_keys, const Choice& choice,
             Symptom symptom, std::vector<uint8_t>* explained, Suspect* s) {
  absl::flat_hash_map<uint64_t, bool> parts;
  const auto& units = obs.units();
  const std::optional<uint32_t> far =
      choice.kind == SuspectKind::kRnic ? obs.stand_in_of(obs.tor_of(static_cast<uint32_t>(choice.index)))
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
    for (size_t j = 0; j < n; ++j) parts[keys[j]] |= UnitCounts(units[i], symptom).k > 0;
  }
  s->parts_total = static_cast<uint32_t>(parts.size());
  for (const auto& [key, hit] : parts) s->parts_lossy += hit;
}

// The suspect for `choice`, its units set aside.
Suspect MakeSuspect(const Observations& obs, const std::vector<uint64_t>& pair_keys, const Choice& choice,
                    Symptom symptom, std::vector<uint8_t>* explained, const LocalizeOptions& options) {
  Suspect s;
  s.kind = choice.kind;
  s.symptom = symptom;
  if (choice.kind == SuspectKind::kRnic && !obs.host_reason(static_cast<uint32_t>(choice.index)).empty()) {
    s.kind = SuspectKind::kHost;
    s.host_reason = obs.host_reason(static_cast<uint32_t>(choice.index));
  }
  s.component = ComponentName(obs, pair_keys, choice);
  Explain(obs, pair_keys, choice, symptom, explained, &s);
  const size_t sizes = obs.sizes().size();
  if (choice.filter >= 1 && choice.filter <= sizes) s.size_bytes = obs.sizes()[choice.filter - 1];
  if (choice.filter > sizes) s.dscp = obs.dscps()[choice.filter - 1 - sizes];
  s.sent = choice.counts.n;
  s.lost = choice.counts.k;
  s.loss_ratio = Rate(s.lost, s.sent);
  s.reference = choice.reference;
  s.llr = choice.llr;
  s.confidence = choice.llr / (choice.llr + options.min_llr);
  std::string cls;
  if (s.size_bytes.has_value()) cls = absl::StrCat(" probes of ", *s.size_bytes, " B");
  if (s.dscp.has_value()) cls = absl::StrCat(" probes with DSCP ", *s.dscp);
  const bool loss = symptom == Symptom::kLoss;
  s.evidence = absl::StrCat(loss ? "lost " : "slow ", s.lost, " of ", s.sent, cls, loss ? "" : " answered", " (",
                            Percent(s.loss_ratio), ", reference ", Percent(s.reference), ") with ", s.parts_lossy,
                            " of ", s.parts_total, " ", PartsName(s.kind), loss ? " losing" : " slow", "; LLR ",
                            absl::StrFormat("%.0f", s.llr));
  if (!s.host_reason.empty()) absl::StrAppend(&s.evidence, "; the host says: ", s.host_reason);
  return s;
}

// The explain-away search over one symptom's counts.
void Search(const Observations& obs, const absl::flat_hash_map<uint64_t, uint32_t>& pair_index,
            const std::vector<uint64_t>& pair_keys, Symptom symptom, const LocalizeOptions& options,
            std::vector<Suspect>* out) {
  const auto& units = obs.units();
  std::vector<uint8_t> explained(units.size(), 0);
  // Every window but those an unrestricted suspect explained: the other
  // classes a class is judged against (Aggregates::ClassPeers).
  Aggregates whole(obs, pair_index, symptom);
  for (const auto& u : units) whole.Add(u);
  std::vector<uint8_t> before;
  // Busy hosts (kind host) are counted apart: their agents said so, they are
  // not the network's faults, and a fleet with many of them must not fill
  // max_suspects before a network fault is reached (20 busy hosts in 10,000
  // crowded out a lossy RNIC). They have a bound of their own.
  size_t network = 0, busy = 0;
  while (network < options.max_suspects && busy < kMaxBusyHostSuspects) {
    Aggregates agg(obs, pair_index, symptom);
    agg.SetWhole(&whole);
    for (size_t i = 0; i < units.size(); ++i) {
      if (!explained[i]) agg.Add(units[i]);
    }
    std::optional<Choice> best = PickBest(agg, options);
    if (!best.has_value()) break;
    const Choice chosen = DrillDown(agg, obs, pair_keys, *best, options);
    if (chosen.filter == 0) before = explained;
    out->push_back(MakeSuspect(obs, pair_keys, chosen, symptom, &explained, options));
    ++(out->back().kind == SuspectKind::kHost ? busy : network);
    for (size_t i = 0; chosen.filter == 0 && i < units.size(); ++i) {
      if (explained[i] && !before[i]) whole.Remove(units[i]);
    }
  }
}

}  // namespace

absl::StatusOr<Localization> Localize(const Observations& obs, const LocalizeOptions& options) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  Localization out;
  absl::flat_hash_map<uint64_t, uint32_t> pair_index;
  std::vector<uint64_t> pair_keys;
  for (const auto& u : obs.units()) {
    out.sent += u.sent;
    out.lost += u.lost;
    out.slow += u.slow;
    const uint32_t tp = obs.tor_of(u.prober), tt = obs.tor_of(u.target);
    if (tp == tt) continue;
    if (pair_index.emplace(PairKey(tp, tt), static_cast<uint32_t>(pair_keys.size())).second) {
      pair_keys.push_back(PairKey(tp, tt));
    }
  }
  Search(obs, pair_index, pair_keys, Symptom::kLoss, options, &out.suspects);
  Search(obs, pair_index, pair_keys, Symptom::kLatency, options, &out.suspects);
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
