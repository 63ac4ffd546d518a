// The diagnose check `converged`: the accepted config must be in force.
#include "diagnose/check.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace roced::diagnose {

namespace {

void Converged(const Ctx& c) {
  const auto& cs = c.in.state.config();
  if (cs.generation() == 0 || cs.converged()) return;
  std::vector<std::string> bad;
  for (const auto& f : c.in.state.fields()) {
    if (f.sync() == roced::v1::FIELD_SYNC_IN_SYNC || f.sync() == roced::v1::FIELD_SYNC_NOT_MANAGEABLE) continue;
    std::string sync = roced::v1::FieldSync_Name(f.sync());
    absl::StrReplaceAll({{"FIELD_SYNC_", ""}}, &sync);
    bad.push_back(absl::StrCat(f.object(), " ", f.field(), ": ", sync,
                               f.message().empty() ? "" : absl::StrCat(" (", f.message(), ")")));
  }
  c.Add(roced::v1::SEVERITY_WARNING, "config",
        absl::StrCat("the accepted config (generation ", cs.generation(), ") is not in force"),
        bad.empty() ? "no field status yet" : absl::StrJoin(bad, "; "),
        cs.mode() == roced::v1::MODE_OBSERVE ? "observe mode reports drift without correcting it: "
                                               "`mode: enforce` to correct, or fix by hand"
                                             : "see `rocectl status`; failed fields name the kernel's answer");
}

}  // namespace

const Check kConvergedCheck = {{"converged", "the accepted config not in force",
                        "the accepted config and the fields in force (state)",
                        "the accepted config must be in force"},
                       Converged, nullptr};

}  // namespace roced::diagnose
