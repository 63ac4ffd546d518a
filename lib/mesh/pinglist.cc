#include "mesh/pinglist.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"

namespace roced::mesh {
namespace {

struct Tor {
  std::string pod;
  std::vector<const Member*> members;
};

// The member of `tor` at `rank` (0 = highest weight) for `key`.
const Member* AtRank(const Tor& tor, std::string_view key, size_t rank) {
  std::vector<std::pair<uint64_t, const Member*>> w;
  w.reserve(tor.members.size());
  for (const Member* m : tor.members) w.emplace_back(RendezvousWeight(key, m->name), m);
  auto higher = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second->name < b.second->name;
  };
  std::nth_element(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(rank), w.end(), higher);
  return w[rank].second;
}

// How many members of `tor` rank above `self` for `key`.
size_t RankOf(const Tor& tor, std::string_view key, const Member& self) {
  const uint64_t mine = RendezvousWeight(key, self.name);
  size_t above = 0;
  for (const Member* m : tor.members) {
    if (m == &self) continue;
    const uint64_t w = RendezvousWeight(key, m->name);
    if (w > mine || (w == mine && m->name < self.name)) ++above;
  }
  return above;
}

}  // namespace

std::string TorKey(const Member& m) {
  return m.tor.empty() ? std::string(1, '\0') + m.name : m.tor;
}

const char* PeerScopeName(PeerScope scope) {
  switch (scope) {
    case PeerScope::kSameTor:
      return "tor";
    case PeerScope::kSamePod:
      return "pod";
    case PeerScope::kOtherPod:
      return "fleet";
  }
  return "unknown";
}

uint64_t RendezvousWeight(std::string_view key, std::string_view member) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  auto mix_in = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
  };
  mix_in(key);
  h ^= 0xff;  // a separator no UTF-8 text holds: ("ab","c") != ("a","bc")
  h *= 0x100000001b3ULL;
  mix_in(member);
  // FNV's low bits are weak for short inputs: finish with splitmix64's mixer.
  return SplitMix64Finalize(h);
}

uint64_t SplitMix64Finalize(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

absl::Status Validate(const PinglistOptions& options) {
  if (options.probers_per_tor_pair < 1 || options.probers_per_tor_pair > kMaxProbersPerTorPair) {
    return absl::InvalidArgumentError(absl::StrCat("mesh.probers_per_tor_pair: ", options.probers_per_tor_pair,
                                                   " is out of range [1, ", kMaxProbersPerTorPair, "]"));
  }
  if (options.max_peers < 1 || options.max_peers > kMaxPeersLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("mesh.max_peers: ", options.max_peers, " is out of range [1, ", kMaxPeersLimit, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Pinglist> ComputePinglist(std::string_view self_name, const std::vector<Member>& members,
                                         const PinglistOptions& options) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  std::map<std::string, Tor> tors;
  std::set<std::string_view> names;
  const Member* self = nullptr;
  for (const Member& m : members) {
    if (!names.insert(m.name).second) continue;
    Tor& tor = tors[TorKey(m)];
    if (tor.members.empty()) tor.pod = m.pod;
    tor.members.push_back(&m);
    if (m.name == self_name) self = &m;
  }
  if (self == nullptr) {
    return absl::NotFoundError(absl::StrCat("mesh: '", std::string(self_name), "' is not in the membership (",
                                            names.size(), " members)"));
  }
  const std::string own_key = TorKey(*self);
  const Tor& own = tors[own_key];

  Pinglist out;
  for (const Member* m : own.members) {
    if (m != self) out.entries.push_back({m->name, m->tor, PeerScope::kSameTor});
  }
  struct Cross {
    PinglistEntry entry;
    uint64_t weight;
  };
  std::vector<Cross> cross;
  const size_t probers = std::min<size_t>(options.probers_per_tor_pair, own.members.size());
  for (const auto& [key, tor] : tors) {
    if (key == own_key) continue;
    const std::string pair = absl::StrCat(own_key, "\x1f", key);
    const size_t rank = RankOf(own, pair, *self);
    if (rank >= probers) continue;
    // Fewer targets than probers: the probers share them (distinct probers
    // still cover the pair).
    const Member* target = AtRank(tor, pair, rank % tor.members.size());
    const PeerScope scope = tor.pod == own.pod ? PeerScope::kSamePod : PeerScope::kOtherPod;
    cross.push_back({{target->name, target->tor, scope}, RendezvousWeight(pair, self->name)});
  }
  // Over the bound: same-ToR peers first, then the cross-ToR ones of
  // highest weight (every agent of a ToR drops different pairs, so the
  // fleet loses the least coverage).
  if (out.entries.size() > options.max_peers) {
    out.dropped += out.entries.size() - options.max_peers;
    std::sort(out.entries.begin(), out.entries.end(),
              [](const PinglistEntry& a, const PinglistEntry& b) { return a.peer < b.peer; });
    out.entries.resize(options.max_peers);
  }
  const size_t room = options.max_peers - out.entries.size();
  if (cross.size() > room) {
    std::sort(cross.begin(), cross.end(), [](const Cross& a, const Cross& b) {
      return a.weight != b.weight ? a.weight > b.weight : a.entry.peer < b.entry.peer;
    });
    out.dropped += cross.size() - room;
    cross.resize(room);
  }
  std::sort(out.entries.begin(), out.entries.end(),
            [](const PinglistEntry& a, const PinglistEntry& b) { return a.peer < b.peer; });
  std::sort(cross.begin(), cross.end(),
            [](const Cross& a, const Cross& b) { return a.entry.peer < b.entry.peer; });
  for (Cross& c : cross) out.entries.push_back(std::move(c.entry));
  return out;
}

}  // namespace roced::mesh
