// Mesh fault localization: over the windows a fleet's agents would report
// (their real pinglists, probes of four classes, losses drawn from a
// seeded generator), each kind of fault is named as the component it is,
// not a neighbour of it; a healthy fleet gives no suspect; several faults
// at once are each found; bad input is refused naming the field.
#include "mesh/localize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iterator>
#include <random>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace roced::mesh {
namespace {

using ::testing::HasSubstr;

// `tors` ToRs of `hosts` members each, one pod: host "t2-h3" under "tor-2".
std::vector<Member> Fleet(int tors, int hosts) {
  std::vector<Member> out;
  for (int t = 0; t < tors; ++t) {
    for (int h = 0; h < hosts; ++h) {
      out.push_back({absl::StrCat("t", t, "-h", h), absl::StrCat("10.0.", t, ".", h, ":7471"),
                     absl::StrCat("tor-", t), "pod0"});
    }
  }
  return out;
}

struct ProbeClass {
  uint32_t size, dscp;
};
// Sizes rotated at RoCE's DSCP and at the default class.
constexpr ProbeClass kClasses[] = {{64, 26}, {1024, 26}, {4096, 26}, {64, 0}, {1024, 0}, {4096, 0}};

// The chance that one probe from `prober` to `target` of class c is lost,
// and the ECMP path it takes (0 or 1: two spines).
using LossModel = std::function<double(const Member& prober, const Member& target, ProbeClass c, int spine)>;

double Healthy(const Member&, const Member&, ProbeClass, int) { return 1e-5; }

// Every agent's windows over `seconds` at the default rates (10/s to each
// ToR mate, 1/s across), split evenly over the classes and the two
// spines, losses drawn per (pair, class, spine) from a seeded binomial.
Observations Observe(const std::vector<Member>& fleet, const LossModel& loss, int seconds = 30,
                     uint32_t seed = 1) {
  Observations obs(fleet);
  std::mt19937_64 rng(seed);
  for (uint32_t p = 0; p < fleet.size(); ++p) {
    absl::StatusOr<Pinglist> list = ComputePinglist(fleet[p].name, fleet, {});
    EXPECT_TRUE(list.ok()) << list.status();
    for (const PinglistEntry& e : list->entries) {
      const uint32_t t = *obs.index_of(e.peer);
      const uint64_t per_class =
          (e.scope == PeerScope::kSameTor ? 10u : 1u) * static_cast<uint64_t>(seconds) / std::size(kClasses);
      for (ProbeClass c : kClasses) {
        uint64_t lost = 0;
        for (int spine = 0; spine < 2; ++spine) {
          std::binomial_distribution<uint64_t> draw(per_class / 2, loss(fleet[p], fleet[t], c, spine));
          lost += draw(rng);
        }
        EXPECT_TRUE(obs.Add(p, t, c.size, c.dscp, per_class / 2 * 2, lost).ok());
      }
    }
  }
  return obs;
}

Localization LocalizeAll(const Observations& obs) {
  absl::StatusOr<Localization> l = Localize(obs, {});
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? *l : Localization{};
}

std::string Describe(const Localization& l) {
  std::string out;
  for (const Suspect& s : l.suspects) {
    absl::StrAppend(&out, SuspectKindName(s.kind), " ", s.component, ": ", s.evidence, "\n");
  }
  return out;
}

bool Under(const Member& m, const std::string& tor) { return m.tor == tor; }

TEST(Localize, AHealthyFleetHasNoSuspect) {
  const auto fleet = Fleet(8, 8);
  Observations obs = Observe(fleet, Healthy);
  Localization l = LocalizeAll(obs);
  EXPECT_TRUE(l.suspects.empty()) << Describe(l);
  EXPECT_GT(l.sent, 100000u);
}

TEST(Localize, ADeadRnicIsNamedAsItsHostNotItsTor) {
  const auto fleet = Fleet(8, 8);
  const std::string dead = "t3-h5";
  Localization l = LocalizeAll(Observe(fleet, [&](const Member& a, const Member& b, ProbeClass, int) {
    return a.name == dead || b.name == dead ? 1.0 : 1e-5;
  }));
  ASSERT_EQ(l.suspects.size(), 1u) << Describe(l);
  const Suspect& s = l.suspects[0];
  EXPECT_EQ(s.kind, SuspectKind::kRnic);
  EXPECT_EQ(s.component, dead);
  EXPECT_FALSE(s.size_bytes.has_value());
  EXPECT_FALSE(s.dscp.has_value());
  EXPECT_EQ(s.lost, s.sent);
  EXPECT_EQ(s.parts_lossy, s.parts_total);
  EXPECT_GT(s.confidence, 0.99);
  EXPECT_THAT(s.evidence, HasSubstr("peers losing"));
}

// R-Pingmesh's open case: with two hosts under a ToR, one dead RNIC makes
// half of that ToR's probes fail. The other host's probes across ToRs
// still answer, so the host is named, not the ToR.
TEST(Localize, ADeadRnicUnderAToRWithTwoHostsIsNamedAsTheHost) {
  const auto fleet = Fleet(6, 2);
  const std::string dead = "t2-h1";
  Localization l = LocalizeAll(Observe(fleet, [&](const Member& a, const Member& b, ProbeClass, int) {
    return a.name == dead || b.name == dead ? 1.0 : 1e-5;
  }));
  ASSERT_EQ(l.suspects.size(), 1u) << Describe(l);
  EXPECT_EQ(l.suspects[0].kind, SuspectKind::kRnic);
  EXPECT_EQ(l.suspects[0].component, dead);
}

TEST(Localize, AOnePercentLossyRnicIsNamedAsItsHost) {
  const auto fleet = Fleet(8, 8);
  const std::string lossy = "t1-h2";
  Localization l = LocalizeAll(Observe(fleet, [&](const Member& a, const Member& b, ProbeClass, int) {
    return a.name == lossy || b.name == lossy ? 0.01 : 1e-5;
  }));
  ASSERT_EQ(l.suspects.size(), 1u) << Describe(l);
  EXPECT_EQ(l.suspects[0].kind, SuspectKind::kRnic);
  EXPECT_EQ(l.suspects[0].component, lossy);
  EXPECT_NEAR(l.suspects[0].loss_ratio, 0.01, 0.005);
}

TEST(Localize, AToRThatIsDownIsNamedOnceNotAsEachOfItsHosts) {
  const auto fleet = Fleet(8, 8);
  Localization l = LocalizeAll(Observe(fleet, [&](const Member& a, const Member& b, ProbeClass, int) {
    return Under(a, "tor-4") || Under(b, "tor-4") ? 1.0 : 1e-5;
  }));
  ASSERT_EQ(l.suspects.size(), 1u) << Describe(l);
  EXPECT_EQ(l.suspects[0].kind, SuspectKind::kTor);
  EXPECT_EQ(l.suspects[0].component, "tor-4");
  EXPECT_EQ(l.suspects[0].parts_lossy, 8u);
}

// Loss on one of a ToR's two uplinks: its hosts reach each other, and
// half of their probes across ToRs cross the lossy link.
TEST(Localize, LossOnOneUplinkOfAToRIsNamedAsThatToRsUplinks) {
  const auto fleet = Fleet(8, 8);
  Localization l = LocalizeAll(Observe(fleet, [&](const Member& a, const Member& b, ProbeClass, int spine) {
    const bool crosses = a.tor != b.tor && (Under(a, "tor-6") || Under(b, "tor-6"));
    return crosses && spine == 1 ? 0.05 : 1e-5;
  }));
  ASSERT_EQ(l.suspects.size(), 1u) << Describe(l);
  EXPECT_EQ(l.suspects[0].kind, SuspectKind::kTorUplink);
  EXPECT_EQ(l.suspects[0].component, "tor-6");
  EXPECT_EQ(l.suspects[0].parts_total, 7u);  // the other ToRs
}

// A spine that silently drops frames over 1 KiB: only the 4 KiB probes,
// on half the paths between ToRs, everywhere.
TEST(Localize, ASpineDroppingLargeFramesIsNamedAsTheFabricForThatSize) {
  const auto fleet = Fleet(8, 8);
  Localization l = LocalizeAll(Observe(fleet, [&](const Member& a, const Member& b, ProbeClass c, int spine) {
    return a.tor != b.tor && spine == 0 && c.size > 1024 ? 1.0 : 1e-5;
  }));
  ASSERT_EQ(l.suspects.size(), 1u) << Describe(l);
  const Suspect& s = l.suspects[0];
  EXPECT_EQ(s.kind, SuspectKind::kFabric);
  ASSERT_TRUE(s.size_bytes.has_value());
  EXPECT_EQ(*s.size_bytes, 4096u);
  EXPECT_NEAR(s.loss_ratio, 0.5, 0.1);
  EXPECT_THAT(s.evidence, HasSubstr("probes of 4096 B"));
}

TEST(Localize, ADscpDroppedEverywhereIsNamedAsThatClassFleetWide) {
  const auto fleet = Fleet(8, 8);
  Localization l = LocalizeAll(Observe(fleet, [&](const Member&, const Member&, ProbeClass c, int) {
    return c.dscp == 26 ? 1.0 : 1e-5;
  }));
  ASSERT_EQ(l.suspects.size(), 1u) << Describe(l);
  EXPECT_EQ(l.suspects[0].kind, SuspectKind::kFleet);
  ASSERT_TRUE(l.suspects[0].dscp.has_value());
  EXPECT_EQ(*l.suspects[0].dscp, 26u);
}

TEST(Localize, ThreeFaultsAtOnceAreEachFoundAndNothingElse) {
  const auto fleet = Fleet(8, 8);
  Localization l = LocalizeAll(Observe(fleet, [&](const Member& a, const Member& b, ProbeClass, int spine) {
    if (a.name == "t0-h0" || b.name == "t0-h0") return 1.0;
    if (Under(a, "tor-5") || Under(b, "tor-5")) return 1.0;
    if (a.tor != b.tor && (Under(a, "tor-2") || Under(b, "tor-2")) && spine == 0) return 0.1;
    return 1e-5;
  }));
  ASSERT_EQ(l.suspects.size(), 3u) << Describe(l);
  std::set<std::string> named;
  for (const Suspect& s : l.suspects) named.insert(absl::StrCat(SuspectKindName(s.kind), " ", s.component));
  EXPECT_THAT(named, ::testing::UnorderedElementsAre("rnic t0-h0", "tor tor-5", "tor_uplinks tor-2"));
}

// Two faults in the fabric at once, on different spines: the fabric as a
// whole scores highest, but it is a mixture; each class is named.
TEST(Localize, ADscpDropAndALargeFrameDropOnTwoSpinesAreEachNamed) {
  const auto fleet = Fleet(8, 8);
  Localization l = LocalizeAll(Observe(fleet, [&](const Member& a, const Member& b, ProbeClass c, int spine) {
    if (a.tor == b.tor) return 1e-5;
    if (spine == 0 && c.dscp == 26) return 1.0;
    if (spine == 1 && c.size > 1024) return 1.0;
    return 1e-5;
  }, 60));
  ASSERT_EQ(l.suspects.size(), 2u) << Describe(l);
  EXPECT_EQ(l.suspects[0].kind, SuspectKind::kFabric);
  EXPECT_EQ(l.suspects[1].kind, SuspectKind::kFabric);
  std::set<std::string> classes;
  for (const Suspect& s : l.suspects) {
    classes.insert(s.dscp.has_value() ? absl::StrCat("dscp ", *s.dscp)
                                      : absl::StrCat("size ", s.size_bytes.value_or(0)));
  }
  EXPECT_THAT(classes, ::testing::UnorderedElementsAre("dscp 26", "size 4096")) << Describe(l);
}

// A ToR down and a spine dropping large frames: the fleet scores highest
// as one scope, and is split into the two.
TEST(Localize, AToRDownAndASpineFaultAreNamedSeparatelyNotAsTheFleet) {
  const auto fleet = Fleet(8, 8);
  Localization l = LocalizeAll(Observe(fleet, [&](const Member& a, const Member& b, ProbeClass c, int spine) {
    if (Under(a, "tor-1") || Under(b, "tor-1")) return 1.0;
    if (a.tor != b.tor && spine == 1 && c.size > 1024) return 1.0;
    return 1e-5;
  }));
  ASSERT_EQ(l.suspects.size(), 2u) << Describe(l);
  std::set<std::string> named;
  for (const Suspect& s : l.suspects) {
    named.insert(absl::StrCat(SuspectKindName(s.kind), " ", s.component, " ", s.size_bytes.value_or(0)));
  }
  EXPECT_THAT(named, ::testing::UnorderedElementsAre("tor tor-1 0", "fabric  4096")) << Describe(l);
}

// With two ToRs a ToR's uplinks, the other's and the path between them
// are one scope: the narrowest name, the pair, is given.
TEST(Localize, WithTwoToRsAnUplinkFaultIsNamedAsTheToRPair) {
  const auto fleet = Fleet(2, 4);
  Localization l = LocalizeAll(Observe(fleet, [&](const Member& a, const Member& b, ProbeClass, int) {
    return a.tor != b.tor ? 0.2 : 1e-5;
  }));
  ASSERT_EQ(l.suspects.size(), 1u) << Describe(l);
  EXPECT_EQ(l.suspects[0].kind, SuspectKind::kTorPair);
  EXPECT_EQ(l.suspects[0].component, "tor-0<->tor-1");
}

// The same windows as Prometheus keeps them (rocectl mesh --prometheus):
// across ToRs the far end is only its ToR, so each prober's windows to the
// hosts of another ToR are summed per class into that ToR's stand-in.
Observations FarEndsByToR(const Observations& direct) {
  std::vector<Member> members = direct.members();
  std::map<std::string, uint32_t> stand_in;
  for (const Member& m : direct.members()) {
    if (stand_in.count(m.tor) == 0) {
      stand_in[m.tor] = static_cast<uint32_t>(members.size());
      members.push_back(TorStandIn(m.tor, m.pod));
    }
  }
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> sums;
  for (const Observations::Unit& u : direct.units()) {
    const Member& target = direct.members()[u.target];
    const bool across = direct.members()[u.prober].tor != target.tor;
    auto& cell = sums[{u.prober, across ? stand_in[target.tor] : u.target, direct.sizes()[u.size_class],
                       direct.dscps()[u.dscp_class]}];
    cell.first += u.sent;
    cell.second += u.lost;
  }
  Observations out(members);
  for (const auto& [key, counts] : sums) {
    const auto& [prober, target, size, dscp] = key;
    EXPECT_TRUE(out.Add(prober, target, size, dscp, counts.first, counts.second).ok());
  }
  return out;
}

std::set<std::string> Named(const Localization& l) {
  std::set<std::string> named;
  for (const Suspect& s : l.suspects) {
    named.insert(absl::StrCat(SuspectKindName(s.kind), " ", s.component, s.size_bytes ? absl::StrCat(" size ", *s.size_bytes) : "",
                              s.dscp ? absl::StrCat(" dscp ", *s.dscp) : ""));
  }
  return named;
}

// Every fault of the cases above, localized from the direct windows and
// from the far-ends-by-ToR view: the same suspects, and no stand-in named
// as a host.
TEST(Localize, FarEndsKnownOnlyByTheirToRGiveTheSameSuspects) {
  struct Case {
    const char* what;
    int tors, hosts;
    LossModel loss;
    std::set<std::string> want;
  };
  const std::vector<Case> cases = {
      {"healthy", 8, 8, Healthy, {}},
      {"dead RNIC", 8, 8, [](const Member& a, const Member& b, ProbeClass, int) {
         return a.name == "t3-h5" || b.name == "t3-h5" ? 1.0 : 1e-5;
       }, {"rnic t3-h5"}},
      {"dead RNIC, two hosts a ToR", 6, 2, [](const Member& a, const Member& b, ProbeClass, int) {
         return a.name == "t2-h1" || b.name == "t2-h1" ? 1.0 : 1e-5;
       }, {"rnic t2-h1"}},
      // The routed lab's fault (mesh_routed): 20% loss each way on one
      // host's link under a ToR of two. Across ToRs its losses are half
      // of its ToR's stand-in's; its mate's own probes across are clean.
      {"36% lossy RNIC, two hosts a ToR", 3, 2, [](const Member& a, const Member& b, ProbeClass, int) {
         return a.name == "t2-h0" || b.name == "t2-h0" ? 0.36 : 1e-5;
       }, {"rnic t2-h0"}},
      {"1% lossy RNIC", 8, 8, [](const Member& a, const Member& b, ProbeClass, int) {
         return a.name == "t1-h2" || b.name == "t1-h2" ? 0.01 : 1e-5;
       }, {"rnic t1-h2"}},
      {"ToR down", 8, 8, [](const Member& a, const Member& b, ProbeClass, int) {
         return Under(a, "tor-4") || Under(b, "tor-4") ? 1.0 : 1e-5;
       }, {"tor tor-4"}},
      {"uplink loss", 8, 8, [](const Member& a, const Member& b, ProbeClass, int spine) {
         return a.tor != b.tor && (Under(a, "tor-6") || Under(b, "tor-6")) && spine == 1 ? 0.05 : 1e-5;
       }, {"tor_uplinks tor-6"}},
      // The routed lab's uplink fault (mesh_routed): 20% loss each way on
      // the link from the first ToR of three (two hosts each) to one of two
      // spines, so a round trip crossing it loses about 36%.
      {"uplink loss, two hosts a ToR", 3, 2, [](const Member& a, const Member& b, ProbeClass, int spine) {
         return a.tor != b.tor && (Under(a, "tor-0") || Under(b, "tor-0")) && spine == 1 ? 0.36 : 1e-5;
       }, {"tor_uplinks tor-0"}},
      {"large frames dropped", 8, 8, [](const Member& a, const Member& b, ProbeClass c, int spine) {
         return a.tor != b.tor && spine == 0 && c.size > 1024 ? 1.0 : 1e-5;
       }, {"fabric  size 4096"}},
      {"DSCP dropped", 8, 8, [](const Member&, const Member&, ProbeClass c, int) {
         return c.dscp == 26 ? 1.0 : 1e-5;
       }, {"fleet  dscp 26"}},
      {"three at once", 8, 8, [](const Member& a, const Member& b, ProbeClass, int spine) {
         if (a.name == "t0-h0" || b.name == "t0-h0") return 1.0;
         if (Under(a, "tor-5") || Under(b, "tor-5")) return 1.0;
         if (a.tor != b.tor && (Under(a, "tor-2") || Under(b, "tor-2")) && spine == 0) return 0.1;
         return 1e-5;
       }, {"rnic t0-h0", "tor tor-5", "tor_uplinks tor-2"}},
  };
  for (const Case& c : cases) {
    const Observations direct = Observe(Fleet(c.tors, c.hosts), c.loss);
    const Observations folded = FarEndsByToR(direct);
    size_t to_stand_ins = 0;
    for (const Observations::Unit& u : folded.units()) {
      const bool across = folded.tor_of(u.prober) != folded.tor_of(u.target);
      ASSERT_EQ(across, folded.members()[u.target].stands_for_tor) << c.what;
      to_stand_ins += across;
    }
    ASSERT_GT(to_stand_ins, 0u) << c.what;
    const Localization d = LocalizeAll(direct);
    const Localization f = LocalizeAll(folded);
    EXPECT_EQ(Named(d), c.want) << c.what << ", direct:\n" << Describe(d);
    EXPECT_EQ(Named(f), c.want) << c.what << ", far ends by ToR:\n" << Describe(f);
    EXPECT_EQ(f.sent, d.sent) << c.what;
    EXPECT_EQ(f.lost, d.lost) << c.what;
  }
}

TEST(Observations, AToRStandInCannotProbe) {
  std::vector<Member> members = Fleet(2, 1);
  members.push_back(TorStandIn("tor-1", "pod0"));
  EXPECT_EQ(members.back().name, "tor-1/*");
  Observations obs(members);
  absl::Status s = obs.Add({"tor-1/*", "t0-h0", 64, 0, 10, 0});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("prober"));
  EXPECT_TRUE(obs.Add({"t0-h0", "tor-1/*", 64, 0, 10, 0}).ok());
  EXPECT_EQ(obs.stand_in_of(obs.tor_of(1)), std::optional<uint32_t>(2));
  EXPECT_EQ(obs.stand_in_of(obs.tor_of(0)), std::nullopt);
}

// ---- judged against the fleet itself: peers now and the scope's history --

// What the agents learned before the window and what they see now: the
// chance a probe is lost, and the chance an answer is late (its round
// trip several times what the series had).
struct World {
  LossModel loss = Healthy;
  LossModel slow = nullptr;       // none: nothing late
  LossModel hist_loss = nullptr;  // none: no history
  LossModel hist_slow = nullptr;
  int hist_seconds = 600;
};

double Chance(const LossModel& m, const Member& a, const Member& b, ProbeClass c, int spine) {
  return m ? m(a, b, c, spine) : 0.0;
}

// Like Observe, with slow answers and the history.
Observations ObserveWorld(const std::vector<Member>& fleet, const World& w, int seconds = 30, uint32_t seed = 1) {
  Observations obs(fleet);
  std::mt19937_64 rng(seed);
  auto draw = [&](uint64_t n, double p) { return std::binomial_distribution<uint64_t>(n, std::min(1.0, p))(rng); };
  for (uint32_t p = 0; p < fleet.size(); ++p) {
    absl::StatusOr<Pinglist> list = ComputePinglist(fleet[p].name, fleet, {});
    EXPECT_TRUE(list.ok()) << list.status();
    for (const PinglistEntry& e : list->entries) {
      const uint32_t t = *obs.index_of(e.peer);
      const uint64_t rate = e.scope == PeerScope::kSameTor ? 10u : 1u;
      for (ProbeClass c : kClasses) {
        PathWindow pw{fleet[p].name, fleet[t].name, c.size, c.dscp};
        pw.sent = rate * static_cast<uint64_t>(seconds) / std::size(kClasses);
        pw.lost = draw(pw.sent, w.loss(fleet[p], fleet[t], c, 0));
        pw.slow = draw(pw.sent - pw.lost, Chance(w.slow, fleet[p], fleet[t], c, 0));
        if (w.hist_loss) {
          pw.hist_sent = rate * static_cast<uint64_t>(w.hist_seconds) / std::size(kClasses);
          pw.hist_lost = draw(pw.hist_sent, w.hist_loss(fleet[p], fleet[t], c, 0));
          pw.hist_slow = draw(pw.hist_sent - pw.hist_lost, Chance(w.hist_slow, fleet[p], fleet[t], c, 0));
        }
        EXPECT_TRUE(obs.Add(pw).ok());
      }
    }
  }
  return obs;
}

LossModel Uniform(double p) {
  return [p](const Member&, const Member&, ProbeClass, int) { return p; };
}
// Every probe touching `host` at `bad`, the rest at `rest`.
LossModel HostAt(const std::string& host, double bad, double rest) {
  return [=](const Member& a, const Member& b, ProbeClass, int) { return a.name == host || b.name == host ? bad : rest; };
}

// The same defaults from 1e-6 to 1e-3: no suspect in a healthy fleet at
// either background, and a lossy RNIC (3% each probe) named at both, with
// the reference it was judged against near the background.
TEST(LearnedReference, TheSameDefaultsHoldFromOneInAMillionToOneInAThousand) {
  const auto fleet = Fleet(8, 8);
  for (double level : {1e-6, 1e-3}) {
    World healthy{.loss = Uniform(level), .hist_loss = Uniform(level)};
    Localization l = LocalizeAll(ObserveWorld(fleet, healthy));
    EXPECT_TRUE(l.suspects.empty()) << "background " << level << ":\n" << Describe(l);
    World faulty{.loss = HostAt("t2-h3", 0.03, level), .hist_loss = Uniform(level)};
    l = LocalizeAll(ObserveWorld(fleet, faulty));
    ASSERT_EQ(l.suspects.size(), 1u) << "background " << level << ":\n" << Describe(l);
    EXPECT_EQ(l.suspects[0].kind, SuspectKind::kRnic);
    EXPECT_EQ(l.suspects[0].component, "t2-h3");
    EXPECT_LT(l.suspects[0].reference, level * 3 + 1e-4);
    EXPECT_THAT(l.suspects[0].evidence, HasSubstr("reference"));
  }
}

// A link that has always lost more than its peers (its history shows it)
// is its background, not a fault; without that history it stands out
// against its peers and is named.
TEST(LearnedReference, AHostsOwnHistoryExplainsItsHigherBackground) {
  const auto fleet = Fleet(8, 8);
  // Eight times its peers' loss, within what a history may excuse; ten
  // minutes now, so that it is plain against the peers alone.
  const LossModel noisy_link = HostAt("t5-h1", 8e-4, 1e-4);
  Localization l = LocalizeAll(ObserveWorld(fleet, {.loss = noisy_link, .hist_loss = noisy_link}, 600));
  EXPECT_TRUE(l.suspects.empty()) << Describe(l);
  l = LocalizeAll(ObserveWorld(fleet, {.loss = noisy_link}, 600));
  ASSERT_FALSE(l.suspects.empty());
  EXPECT_EQ(l.suspects[0].component, "t5-h1");
  // The same host getting worse than its own history is named again.
  l = LocalizeAll(ObserveWorld(fleet, {.loss = HostAt("t5-h1", 0.02, 1e-4), .hist_loss = noisy_link}));
  ASSERT_EQ(l.suspects.size(), 1u) << Describe(l);
  EXPECT_EQ(l.suspects[0].component, "t5-h1");
}

// A fault older than the window is in the history too: a dead RNIC, or one
// losing 2% for the last ten minutes, is far above its peers and stays
// named.
TEST(LearnedReference, AFaultThatStoodThroughTheHistoryStaysNamed) {
  const auto fleet = Fleet(8, 8);
  for (double bad : {1.0, 0.02}) {
    const LossModel standing = HostAt("t3-h3", bad, 1e-4);
    Localization l = LocalizeAll(ObserveWorld(fleet, {.loss = standing, .hist_loss = standing}));
    ASSERT_EQ(l.suspects.size(), 1u) << bad << "\n" << Describe(l);
    EXPECT_EQ(l.suspects[0].component, "t3-h3");
    EXPECT_LE(l.suspects[0].reference, 1.2e-3);  // held to ten times its peers
  }
}

// The whole fleet's background rising ten-fold at once is the background
// moving: no scope stands out against its peers, and nothing is named.
TEST(LearnedReference, AFleetWideRiseIsNotBlamedOnAnyComponent) {
  const auto fleet = Fleet(8, 8);
  Localization l = LocalizeAll(ObserveWorld(fleet, {.loss = Uniform(1e-3), .hist_loss = Uniform(1e-4)}));
  EXPECT_TRUE(l.suspects.empty()) << Describe(l);
}

// A fixed floor still works as one: a host losing 3% is not named when
// the floor says 2% is normal.
TEST(LearnedReference, TheOptionalFloorRaisesTheReference) {
  const auto fleet = Fleet(8, 8);
  Observations obs = ObserveWorld(fleet, {.loss = HostAt("t2-h3", 0.03, 1e-5), .hist_loss = Uniform(1e-5)});
  LocalizeOptions o;
  o.baseline_loss = 0.02;
  absl::StatusOr<Localization> l = Localize(obs, o);
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->suspects.empty()) << Describe(*l);
  EXPECT_EQ(LocalizeAll(obs).suspects.size(), 1u);
}

// An overloaded host drops and delays answers: marked busy (its agent's
// CPU pressure), it is named as the host, with its reason, and neither its
// RNIC nor its ToR is blamed. Unmarked, the same losses name its RNIC.
TEST(HostNoise, ABusyHostIsNamedAsTheHostNotItsRnicOrTor) {
  const auto fleet = Fleet(4, 2);
  const World w{.loss = HostAt("t1-h0", 0.2, 1e-5),
                .slow = HostAt("t1-h0", 0.3, 1e-3),
                .hist_loss = Uniform(1e-5),
                .hist_slow = Uniform(1e-3)};
  Observations obs = ObserveWorld(fleet, w);
  ASSERT_TRUE(obs.MarkHost("t1-h0", "CPU pressure 91% (some avg10)").ok());
  Localization l = LocalizeAll(obs);
  ASSERT_FALSE(l.suspects.empty());
  for (const Suspect& s : l.suspects) {
    EXPECT_EQ(s.kind, SuspectKind::kHost) << Describe(l);
    EXPECT_EQ(s.component, "t1-h0");
    EXPECT_EQ(s.host_reason, "CPU pressure 91% (some avg10)");
    EXPECT_THAT(s.evidence, HasSubstr("the host says: CPU pressure 91%"));
  }
  Localization unmarked = LocalizeAll(ObserveWorld(fleet, w));
  ASSERT_FALSE(unmarked.suspects.empty());
  EXPECT_EQ(unmarked.suspects[0].kind, SuspectKind::kRnic) << Describe(unmarked);
}

// Every host busy (a fleet-wide restart): each is judged against the
// others, so a real fault there is still found, as a host finding.
TEST(HostNoise, WhenEveryHostIsBusyAFaultIsStillFound) {
  const auto fleet = Fleet(4, 2);
  Observations obs = ObserveWorld(fleet, {.loss = HostAt("t2-h1", 0.5, 1e-5), .hist_loss = Uniform(1e-5)});
  for (const Member& m : fleet) ASSERT_TRUE(obs.MarkHost(m.name, "agent started 5 s ago").ok());
  Localization l = LocalizeAll(obs);
  ASSERT_FALSE(l.suspects.empty());
  EXPECT_EQ(l.suspects[0].kind, SuspectKind::kHost);
  EXPECT_EQ(l.suspects[0].component, "t2-h1");
}

// Many busy hosts (more than max_suspects) are each named, and a lossy
// RNIC among them is still found: busy hosts are counted apart from the
// network's suspects, so they cannot use up the bound before it.
TEST(HostNoise, ManyBusyHostsDoNotCrowdOutANetworkFault) {
  const auto fleet = Fleet(12, 8);
  std::set<std::string> busy;
  for (int t = 0; t < 12; ++t) {
    for (int h = 0; h < 2; ++h) busy.insert(absl::StrCat("t", t, "-h", h));
  }
  auto touches = [](const std::set<std::string>& names, const Member& a, const Member& b) {
    return names.count(a.name) || names.count(b.name);
  };
  const LossModel loss = [&](const Member& a, const Member& b, ProbeClass, int) {
    if (touches(busy, a, b)) return 0.2;
    return touches({"t7-h5"}, a, b) ? 0.02 : 1e-5;
  };
  Observations obs = ObserveWorld(fleet, {.loss = loss, .hist_loss = Uniform(1e-5)});
  for (const std::string& name : busy) ASSERT_TRUE(obs.MarkHost(name, "CPU pressure 85% (some avg10)").ok());
  ASSERT_GT(busy.size(), LocalizeOptions().max_suspects);
  Localization l = LocalizeAll(obs);
  std::set<std::string> hosts, rnics;
  for (const Suspect& s : l.suspects) {
    (s.kind == SuspectKind::kHost ? hosts : rnics).insert(s.component);
    EXPECT_TRUE(s.kind == SuspectKind::kHost || s.kind == SuspectKind::kRnic) << Describe(l);
  }
  EXPECT_EQ(hosts, busy) << Describe(l);
  EXPECT_EQ(rnics, std::set<std::string>{"t7-h5"}) << Describe(l);
}

// A reason is cut on a character boundary, control characters replaced.
TEST(HostNoise, AReasonIsKeptPrintableAndWhole) {
  Observations obs(Fleet(2, 1));
  std::string reason(kMaxHostReason - 1, 'x');
  reason += "\xc3\xa9 more";  // a two-byte character across the cut
  ASSERT_TRUE(obs.MarkHost("t0-h0", reason).ok());
  EXPECT_EQ(obs.host_reason(0), std::string(kMaxHostReason - 1, 'x'));
  ASSERT_TRUE(obs.MarkHost("t1-h0", "busy\x1b[31m\r").ok());
  EXPECT_EQ(obs.host_reason(1), "busy?[31m?");
}

TEST(Observations, RefusesCountsThatWouldOverflowASum) {
  Observations obs(Fleet(2, 2));
  EXPECT_THAT(obs.Add({"t0-h0", "t1-h0", 64, 26, kMaxProbes + 1, 0}).message(),
              HasSubstr("sent: 274877906945 is more than 274877906944"));
  PathWindow w{"t0-h0", "t1-h0", 64, 26, 10, 0};
  w.hist_sent = uint64_t{1} << 63;
  EXPECT_THAT(obs.Add(w).message(), HasSubstr("hist_sent: "));
  EXPECT_EQ(obs.windows(), 0u);
}

TEST(HostNoise, MarkHostRefusesWhatIsNotOneHost) {
  std::vector<Member> members = Fleet(2, 1);
  members.push_back(TorStandIn("tor-1", "pod0"));
  Observations obs(members);
  EXPECT_EQ(obs.MarkHost("nobody", "busy").code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(obs.MarkHost("tor-1/*", "busy").message(), HasSubstr("stands for a ToR's hosts"));
  EXPECT_THAT(obs.MarkHost("t0-h0", "").message(), HasSubstr("reason"));
  EXPECT_TRUE(obs.host_reason(0).empty());
  ASSERT_TRUE(obs.MarkHost("t0-h0", std::string(500, 'x')).ok());
  EXPECT_EQ(obs.host_reason(0).size(), kMaxHostReason);
  ASSERT_TRUE(obs.MarkHost("t0-h0", "second").ok());
  EXPECT_EQ(obs.host_reason(0), std::string(kMaxHostReason, 'x'));
}

// Latency without loss: an RNIC whose answers are late a tenth of the
// time (its p99 several-fold) is a latency suspect; a ToR's uplinks slow
// for DSCP 0 only are named with that class. Nothing is lost either way.
TEST(Latency, ASlowRnicAndAClassConfinedSlowUplinkAreNamed) {
  const auto fleet = Fleet(8, 4);
  World w{.loss = Uniform(1e-5), .slow = HostAt("t6-h2", 0.10, 5e-4), .hist_loss = Uniform(1e-5),
          .hist_slow = Uniform(5e-4)};
  Localization l = LocalizeAll(ObserveWorld(fleet, w));
  ASSERT_EQ(l.suspects.size(), 1u) << Describe(l);
  EXPECT_EQ(l.suspects[0].symptom, Symptom::kLatency);
  EXPECT_EQ(l.suspects[0].kind, SuspectKind::kRnic);
  EXPECT_EQ(l.suspects[0].component, "t6-h2");
  EXPECT_THAT(l.suspects[0].evidence, HasSubstr("answered"));
  w.slow = [](const Member& a, const Member& b, ProbeClass c, int) {
    const bool via = a.tor != b.tor && (a.tor == "tor-3" || b.tor == "tor-3");
    return via && c.dscp == 0 ? 0.2 : 5e-4;
  };
  l = LocalizeAll(ObserveWorld(fleet, w));
  ASSERT_EQ(l.suspects.size(), 1u) << Describe(l);
  EXPECT_EQ(l.suspects[0].symptom, Symptom::kLatency);
  EXPECT_EQ(l.suspects[0].kind, SuspectKind::kTorUplink);
  EXPECT_EQ(l.suspects[0].component, "tor-3");
  EXPECT_EQ(l.suspects[0].dscp, std::optional<uint32_t>(0));
  const Observations again = ObserveWorld(fleet, w);
  uint64_t slow = 0;
  for (const auto& u : again.units()) slow += u.slow;
  EXPECT_EQ(l.slow, slow);
  EXPECT_GT(slow, 0u);
}

TEST(Observations, RefusesSlowOrHistoryCountsThatCannotBe) {
  Observations obs(Fleet(2, 2));
  PathWindow w{"t0-h0", "t1-h0", 64, 26, 10, 2};
  w.slow = 9;
  EXPECT_THAT(obs.Add(w).message(), HasSubstr("slow: 9 is more than the 8 answered"));
  w.slow = 0;
  w.hist_sent = 5;
  w.hist_lost = 6;
  EXPECT_THAT(obs.Add(w).message(), HasSubstr("hist_lost: 6 is more than hist_sent (5)"));
  w.hist_lost = 1;
  w.hist_slow = 5;
  EXPECT_THAT(obs.Add(w).message(), HasSubstr("hist_slow: 5 is more than the 4 answered"));
  EXPECT_EQ(obs.windows(), 0u);
}

TEST(TwoSampleLlr, WeighsAShortHistoryLittle) {
  // 30 of 1000 now against 10 of 1000 before, and against 100 of 10000.
  const double short_history = TwoSampleLlr(30, 1000, 10, 1000);
  const double long_history = TwoSampleLlr(30, 1000, 100, 10000);
  EXPECT_GT(short_history, 5);
  EXPECT_GT(long_history, short_history);
  // One rate for both explains no worse when now is not above before.
  EXPECT_EQ(TwoSampleLlr(10, 1000, 30, 1000), 0);
  EXPECT_EQ(TwoSampleLlr(10, 1000, 0, 0), 0);
  // Against an exact reference it tends to the one-sample LLR.
  EXPECT_NEAR(TwoSampleLlr(30, 1000, 10000, 1000000), LossLlr(30, 1000, 0.01), 0.5);
}

TEST(LossLlr, IsTheBinomialLogLikelihoodRatio) {
  EXPECT_NEAR(LossLlr(10, 10, 0.1), 10 * std::log(10.0), 1e-9);
  // 5 of 100 against 1%: 5 ln 5 + 95 ln(0.95/0.99).
  EXPECT_NEAR(LossLlr(5, 100, 0.01), 5 * std::log(5.0) + 95 * std::log(0.95 / 0.99), 1e-9);
  EXPECT_EQ(LossLlr(1, 1000, 0.01), 0);  // below the baseline
  EXPECT_EQ(LossLlr(0, 1000, 0.01), 0);
  EXPECT_EQ(LossLlr(0, 0, 0.01), 0);
}

TEST(Observations, RefusesWhatCannotBeAWindowNamingTheField) {
  Observations obs(Fleet(2, 2));
  EXPECT_THAT(obs.Add({"t0-h0", "t1-h0", 64, 26, 10, 11}).message(), HasSubstr("lost: 11 is more than sent (10)"));
  EXPECT_THAT(obs.Add({"t0-h0", "t1-h0", 64, 64, 10, 1}).message(), HasSubstr("dscp: 64 is not in [0, 63]"));
  EXPECT_EQ(obs.Add({"nobody", "t1-h0", 64, 26, 10, 1}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(obs.Add({"t0-h0", "t0-h0", 64, 26, 10, 1}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(obs.windows(), 0u);
  EXPECT_TRUE(obs.Add({"t0-h0", "t1-h0", 64, 26, 10, 1}).ok());
  EXPECT_EQ(obs.windows(), 1u);
}

TEST(Observations, ClassesBeyondTheCapCountOnlyUnrestricted) {
  Observations obs(Fleet(2, 2));
  for (uint32_t size = 1; size <= kMaxClassValues + 3; ++size) {
    ASSERT_TRUE(obs.Add({"t0-h0", "t1-h0", size, 0, 10, 0}).ok());
  }
  EXPECT_EQ(obs.sizes().size(), kMaxClassValues);
  EXPECT_EQ(obs.units().back().size_class, Observations::kNoClass);
}

TEST(LocalizeOptions, OutOfRangeNamesTheFieldAndTheRange) {
  Observations obs(Fleet(2, 2));
  LocalizeOptions o;
  o.baseline_loss = 0.5;
  EXPECT_THAT(Localize(obs, o).status().message(), HasSubstr("baseline_loss: 0.5 is not 0 (none) or in [1e-09, 0.1]"));
  o = {};
  o.max_suspects = 0;
  EXPECT_THAT(Localize(obs, o).status().message(), HasSubstr("max_suspects: 0 is not in [1, 64]"));
  o = {};
  o.min_ratio = 0.5;
  EXPECT_THAT(Localize(obs, o).status().message(), HasSubstr("min_ratio"));
}

TEST(TorMatrix, SumsEachOrderedToRPair) {
  Observations obs(Fleet(2, 2));
  ASSERT_TRUE(obs.Add({"t0-h0", "t1-h0", 64, 26, 10, 1}).ok());
  ASSERT_TRUE(obs.Add({"t0-h1", "t1-h1", 64, 26, 20, 2}).ok());
  ASSERT_TRUE(obs.Add({"t1-h0", "t0-h0", 64, 26, 5, 0}).ok());
  ASSERT_TRUE(obs.Add({"t0-h0", "t0-h1", 64, 26, 7, 0}).ok());
  std::vector<TorCell> m = TorMatrix(obs);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(obs.tors()[m[0].from], "tor-0");
  EXPECT_EQ(obs.tors()[m[0].to], "tor-0");
  EXPECT_EQ(m[0].sent, 7u);
  EXPECT_EQ(obs.tors()[m[1].to], "tor-1");
  EXPECT_EQ(m[1].sent, 30u);
  EXPECT_EQ(m[1].lost, 3u);
  EXPECT_EQ(m[2].sent, 5u);
}

}  // namespace
}  // namespace roced::mesh
