// rocectl diagnose's rendering: errors first as the agent sends them, each
// with its why and fix lines, and a count by severity.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tools/rocectl/diagnose_cmd.h"

namespace roced::ctl {
namespace {

using ::testing::HasSubstr;

TEST(DiagnoseText, OneBlockPerFindingThenCounts) {
  roced::v1::DiagnoseResponse r;
  auto* e = r.add_findings();
  e->set_check("pfc_dscp");
  e->set_severity(roced::v1::SEVERITY_ERROR);
  e->set_object("eth0");
  e->set_summary("RoCE traffic (ToS 106 = DSCP 26) is classified to priority 3, but PFC is on [4]");
  e->set_detail("the DSCP app table maps it there");
  e->set_remedy("map DSCP 26 to priority 4");
  auto* w = r.add_findings();
  w->set_check("memlock");
  w->set_severity(roced::v1::SEVERITY_WARNING);
  w->set_object("roced");
  w->set_summary("RLIMIT_MEMLOCK is 8192 KiB, not unlimited");
  std::string text = DiagnoseText(r);
  EXPECT_THAT(text, HasSubstr("ERROR  pfc_dscp  eth0: RoCE traffic (ToS 106 = DSCP 26)"));
  EXPECT_THAT(text, HasSubstr("\n    why: the DSCP app table maps it there\n    fix: map DSCP 26 to priority 4\n"));
  EXPECT_THAT(text, HasSubstr("WARNING  memlock  roced: RLIMIT_MEMLOCK"));
  EXPECT_THAT(text, HasSubstr("1 error(s), 1 warning(s), 0 note(s).\n"));
  EXPECT_LT(text.find("ERROR"), text.find("WARNING"));
}

TEST(DiagnoseText, NoFindingsSaysSo) {
  EXPECT_EQ(DiagnoseText({}), "No findings: every check passed.\n");
}

}  // namespace
}  // namespace roced::ctl
