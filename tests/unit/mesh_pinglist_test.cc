// The mesh pinglist: what every agent computes on its own covers every
// ToR pair with distinct host pairs, is the same whatever order the
// membership comes in, moves little when a member comes or goes, survives
// one dead host, and keeps to its bound.
#include "mesh/pinglist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"

namespace roced::mesh {
namespace {

using ::testing::HasSubstr;

// pods x tors_per_pod ToRs of `hosts` members each: host "p1-t2-h3".
std::vector<Member> Fleet(int pods, int tors_per_pod, int hosts) {
  std::vector<Member> out;
  for (int p = 0; p < pods; ++p) {
    for (int t = 0; t < tors_per_pod; ++t) {
      for (int h = 0; h < hosts; ++h) {
        out.push_back({absl::StrCat("p", p, "-t", t, "-h", h), absl::StrCat("10.", p, ".", t, ".", h, ":7471"),
                       absl::StrCat("tor-p", p, "-t", t), absl::StrCat("pod", p)});
      }
    }
  }
  return out;
}

// k = 2 probers per ToR pair: small enough that the fleets below, of 2 to 6
// hosts a ToR, show what the choice does when a ToR has more members than k.
PinglistOptions TwoProbers() {
  PinglistOptions o;
  o.probers_per_tor_pair = 2;
  return o;
}

// Every agent's pinglist: name -> entries.
std::map<std::string, std::vector<PinglistEntry>> All(const std::vector<Member>& fleet,
                                                      const PinglistOptions& options = TwoProbers()) {
  std::map<std::string, std::vector<PinglistEntry>> out;
  for (const Member& m : fleet) {
    absl::StatusOr<Pinglist> p = ComputePinglist(m.name, fleet, options);
    EXPECT_TRUE(p.ok()) << p.status();
    if (p.ok()) out[m.name] = p->entries;
  }
  return out;
}

std::map<std::string, std::string> TorOf(const std::vector<Member>& fleet) {
  std::map<std::string, std::string> out;
  for (const Member& m : fleet) out[m.name] = m.tor;
  return out;
}

// Ordered ToR pair -> the (prober, target) host pairs that probe it.
using PairMap = std::map<std::pair<std::string, std::string>, std::set<std::pair<std::string, std::string>>>;
PairMap TorPairs(const std::vector<Member>& fleet,
                 const std::map<std::string, std::vector<PinglistEntry>>& lists) {
  const auto tor = TorOf(fleet);
  PairMap out;
  for (const auto& [prober, entries] : lists) {
    for (const PinglistEntry& e : entries) {
      if (e.scope == PeerScope::kSameTor) continue;
      out[{tor.at(prober), e.tor}].insert({prober, e.peer});
    }
  }
  return out;
}

TEST(MeshPinglist, EveryToRPairIsProbedByDistinctHostPairsAndEveryToRMateDirectly) {
  const std::vector<Member> fleet = Fleet(2, 3, 4);  // 6 ToRs of 4
  const auto lists = All(fleet);
  const auto tor = TorOf(fleet);
  // Under the ToR: every other member, scope "tor".
  for (const auto& [name, entries] : lists) {
    std::set<std::string> mates;
    for (const PinglistEntry& e : entries) {
      if (e.scope == PeerScope::kSameTor) mates.insert(e.peer);
      EXPECT_NE(e.peer, name) << "an agent never probes itself";
    }
    EXPECT_EQ(mates.size(), 3u) << name;
    for (const std::string& m : mates) EXPECT_EQ(tor.at(m), tor.at(name));
  }
  const PairMap pairs = TorPairs(fleet, lists);
  EXPECT_EQ(pairs.size(), 6u * 5u) << "every ordered pair of the 6 ToRs";
  for (const auto& [tors, hosts] : pairs) {
    std::set<std::string> probers, targets;
    for (const auto& [p, t] : hosts) {
      probers.insert(p);
      targets.insert(t);
      EXPECT_EQ(tor.at(p), tors.first);
      EXPECT_EQ(tor.at(t), tors.second);
    }
    EXPECT_EQ(probers.size(), 2u) << tors.first << " -> " << tors.second;
    EXPECT_EQ(targets.size(), 2u) << tors.first << " -> " << tors.second;
  }
}

TEST(MeshPinglist, ScopeSaysWhetherThePeerIsInThePodOrAcrossPods) {
  const std::vector<Member> fleet = Fleet(2, 2, 2);
  absl::StatusOr<Pinglist> p = ComputePinglist("p0-t0-h0", fleet, {});
  ASSERT_TRUE(p.ok()) << p.status();
  for (const PinglistEntry& e : p->entries) {
    const PeerScope want = e.tor == "tor-p0-t0"              ? PeerScope::kSameTor
                           : e.tor.rfind("tor-p0-", 0) == 0 ? PeerScope::kSamePod
                                                             : PeerScope::kOtherPod;
    EXPECT_EQ(e.scope, want) << e.peer << " " << PeerScopeName(e.scope);
  }
  EXPECT_STREQ(PeerScopeName(PeerScope::kOtherPod), "fleet");
}

TEST(MeshPinglist, TheOrderOfTheMembershipDoesNotChangeAnyChoice) {
  std::vector<Member> fleet = Fleet(2, 4, 5);
  const auto lists = All(fleet);
  std::mt19937 rng(7);
  std::shuffle(fleet.begin(), fleet.end(), rng);
  const auto shuffled = All(fleet);
  for (const auto& [name, entries] : lists) {
    const auto& other = shuffled.at(name);
    ASSERT_EQ(entries.size(), other.size()) << name;
    for (size_t i = 0; i < entries.size(); ++i) EXPECT_EQ(entries[i].peer, other[i].peer) << name;
  }
}

// A member leaving changes only the entries it was in (as prober or as
// target) and their replacements: nothing else in the fleet moves.
TEST(MeshPinglist, AMemberLeavingMovesOnlyThePairsItWasIn) {
  const std::vector<Member> fleet = Fleet(2, 4, 6);
  const auto before = All(fleet);
  const std::string gone = "p1-t2-h3";
  std::vector<Member> after_fleet;
  for (const Member& m : fleet) {
    if (m.name != gone) after_fleet.push_back(m);
  }
  const auto after = All(after_fleet);
  const auto tor = TorOf(fleet);
  size_t involved = before.at(gone).size();  // its own entries
  for (const auto& [name, entries] : before) {
    for (const PinglistEntry& e : entries) involved += e.peer == gone;
  }
  size_t added = 0;
  for (const auto& [name, entries] : after) {
    std::set<std::string> was;
    for (const PinglistEntry& e : before.at(name)) was.insert(e.peer);
    for (const PinglistEntry& e : entries) {
      if (was.count(e.peer)) continue;
      ++added;
      // A new entry only where the member was: its ToR, as prober or target.
      EXPECT_TRUE(tor.at(name) == tor.at(gone) || e.tor == tor.at(gone))
          << name << " -> " << e.peer << " changed though neither side is under " << tor.at(gone);
    }
  }
  EXPECT_GT(added, 0u) << "its pairs are taken over";
  EXPECT_LE(added, involved) << "no more replacements than entries it was in";
  // Still covered, by distinct host pairs.
  const PairMap pairs = TorPairs(after_fleet, after);
  EXPECT_EQ(pairs.size(), 8u * 7u);
  for (const auto& [tors, hosts] : pairs) EXPECT_EQ(hosts.size(), 2u) << tors.first << " -> " << tors.second;
}

// Two hosts under each ToR (the case R-Pingmesh names as open): any one
// host down, every ToR pair is still probed by a pair not involving it.
TEST(MeshPinglist, WithTwoHostsPerToROneDeadHostBlindsNoToRPair) {
  const std::vector<Member> fleet = Fleet(1, 5, 2);
  const PairMap pairs = TorPairs(fleet, All(fleet));
  ASSERT_EQ(pairs.size(), 5u * 4u);
  for (const Member& dead : fleet) {
    for (const auto& [tors, hosts] : pairs) {
      size_t alive = 0;
      for (const auto& [p, t] : hosts) alive += p != dead.name && t != dead.name;
      EXPECT_GE(alive, 1u) << dead.name << " down blinds " << tors.first << " -> " << tors.second;
    }
  }
}

TEST(MeshPinglist, AToRWithFewerMembersThanProbersIsStillCoveredByDistinctProbers) {
  std::vector<Member> fleet = Fleet(1, 2, 3);
  fleet.push_back({"lone", "10.9.9.9:7471", "tor-lone", "pod0"});
  const PairMap pairs = TorPairs(fleet, All(fleet));
  // Into the lone ToR: two distinct probers share its one target.
  for (const char* from : {"tor-p0-t0", "tor-p0-t1"}) {
    const auto& hosts = pairs.at({from, "tor-lone"});
    std::set<std::string> probers;
    for (const auto& [p, t] : hosts) {
      probers.insert(p);
      EXPECT_EQ(t, "lone");
    }
    EXPECT_EQ(probers.size(), 2u) << from;
  }
  // Out of it: one prober (k is capped by the ToR's size), one target per
  // far ToR.
  EXPECT_EQ(pairs.at({"tor-lone", "tor-p0-t0"}).size(), 1u);
}

TEST(MeshPinglist, MembersWithoutAToRStandAloneAndDuplicatesCountOnce) {
  std::vector<Member> fleet = {{"a", "", "", ""}, {"b", "", "", ""}, {"c", "", "tor1", ""},
                               {"c", "", "tor2", ""}};
  absl::StatusOr<Pinglist> p = ComputePinglist("a", fleet, {});
  ASSERT_TRUE(p.ok()) << p.status();
  // No ToR mates; b (alone) and c (tor1, its first entry) across.
  ASSERT_EQ(p->entries.size(), 2u);
  EXPECT_EQ(p->entries[0].peer, "b");
  EXPECT_EQ(p->entries[0].scope, PeerScope::kSamePod);
  EXPECT_EQ(p->entries[1].peer, "c");
  EXPECT_EQ(p->entries[1].tor, "tor1");
}

TEST(MeshPinglist, TheBoundKeepsToRMatesFirstAndCountsWhatItDropped) {
  const std::vector<Member> fleet = Fleet(1, 20, 4);  // 3 mates, 19 far ToRs
  PinglistOptions options;
  absl::StatusOr<Pinglist> full = ComputePinglist("p0-t0-h0", fleet, options);
  ASSERT_TRUE(full.ok());
  ASSERT_GT(full->entries.size(), 5u);
  EXPECT_EQ(full->dropped, 0u);
  options.max_peers = 5;
  absl::StatusOr<Pinglist> cut = ComputePinglist("p0-t0-h0", fleet, options);
  ASSERT_TRUE(cut.ok());
  ASSERT_EQ(cut->entries.size(), 5u);
  EXPECT_EQ(cut->dropped, full->entries.size() - 5);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(cut->entries[i].scope, PeerScope::kSameTor);
  options.max_peers = 2;
  cut = ComputePinglist("p0-t0-h0", fleet, options);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->entries.size(), 2u);
  for (const PinglistEntry& e : cut->entries) EXPECT_EQ(e.scope, PeerScope::kSameTor);
}

TEST(MeshPinglist, BadOptionsAndAnUnknownSelfAreRefusedNamingTheField) {
  const std::vector<Member> fleet = Fleet(1, 2, 2);
  PinglistOptions options;
  options.probers_per_tor_pair = 0;
  absl::StatusOr<Pinglist> p = ComputePinglist("p0-t0-h0", fleet, options);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("mesh.probers_per_tor_pair: 0 is out of range [1, 16]"));
  options = {};
  options.max_peers = kMaxPeersLimit + 1;
  EXPECT_THAT(ComputePinglist("p0-t0-h0", fleet, options).status().message(),
              HasSubstr("mesh.max_peers: 10001 is out of range [1, 10000]"));
  p = ComputePinglist("nobody", fleet, {});
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(p.status().message(), HasSubstr("'nobody' is not in the membership (4 members)"));
}

// Agents of different builds and versions must agree on every choice (a
// fleet is upgraded host by host): the weight is a fixed function. These
// values were computed by the first implementation; a change to the hash
// would reshuffle every pinglist of a mixed-version fleet, so it must
// fail here.
constexpr uint64_t kWeightOfEmpty = 0x4f2db50f124040cdULL;
constexpr uint64_t kWeightOfHost1 = 0xb6fe48f5e6590f2cULL;

TEST(MeshPinglist, TheRendezvousWeightIsTheSameFunctionOnEveryAgent) {
  EXPECT_EQ(RendezvousWeight("tor-a\x1ftor-b", "host-1"), RendezvousWeight("tor-a\x1ftor-b", "host-1"));
  EXPECT_NE(RendezvousWeight("ab", "c"), RendezvousWeight("a", "bc"));
  EXPECT_EQ(RendezvousWeight("", ""), kWeightOfEmpty);
  EXPECT_EQ(RendezvousWeight("tor-a\x1ftor-b", "host-1"), kWeightOfHost1);
}

}  // namespace
}  // namespace roced::mesh
