// The diagnose check `ecn`: ECN must be on for the lossless priorities at both
// ends, or PFC storms take over congestion control.
#include "diagnose/check.h"

#include "absl/strings/str_cat.h"

namespace roced::diagnose {

namespace {

void Ecn(const Ctx& c) {
  for (const auto& [netdev, obs] : RoceNetdevs(c.in)) {
    if (obs == nullptr || !obs->pfc || obs->pfc->enabled == 0) continue;
    const uint8_t lossless = obs->pfc->enabled;
    struct Role {
      const std::optional<uint8_t>& mask;
      const char* name;
      const char* effect;
    };
    for (const Role& r : {Role{obs->ecn_np, "notification point",
                               "the NIC sends no CNPs for ECN-marked packets it receives"},
                          Role{obs->ecn_rp, "reaction point", "the NIC does not slow down when CNPs arrive"}}) {
      if (!r.mask) continue;
      const uint8_t off = lossless & static_cast<uint8_t>(~*r.mask);
      if (off == 0) continue;
      c.Add(roced::v1::SEVERITY_WARNING, netdev,
            absl::StrCat("ECN ", r.name, " is off on PFC priority ", Prios(off)),
            absl::StrCat(r.effect, ", so congestion is left to PFC pauses, which spread it (head-of-line "
                                   "blocking, pause storms)"),
            absl::StrCat("`qos.ecn: {np_priorities: ", Prios(lossless), ", rp_priorities: ", Prios(lossless),
                         "}`"));
    }
  }
}

}  // namespace

const Check kEcnCheck = {{"ecn", "ECN notification/reaction point on the PFC priorities",
                        "ECN notification and reaction points per priority (netdevs)",
                        "ECN must be on for the lossless priorities at both ends, or PFC storms take over congestion control"},
                       Ecn, NoObservedNetdev};

}  // namespace roced::diagnose
