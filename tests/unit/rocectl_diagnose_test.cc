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
  r.set_checks_run(2);
  std::string text = DiagnoseText(r);
  EXPECT_THAT(text, HasSubstr("ERROR  pfc_dscp  eth0: RoCE traffic (ToS 106 = DSCP 26)"));
  EXPECT_THAT(text, HasSubstr("\n    why: the DSCP app table maps it there\n    fix: map DSCP 26 to priority 4\n"));
  EXPECT_THAT(text, HasSubstr("WARNING  memlock  roced: RLIMIT_MEMLOCK"));
  EXPECT_THAT(text, HasSubstr("1 error(s), 1 warning(s), 0 note(s) from 2 check(s).\n"));
  EXPECT_LT(text.find("ERROR"), text.find("WARNING"));
  EXPECT_EQ(DiagnoseExitCode(r), kExitFindings);
}

TEST(DiagnoseText, NoFindingsSaysHowManyChecksPassed) {
  roced::v1::DiagnoseResponse r;
  r.set_checks_run(20);
  EXPECT_EQ(DiagnoseText(r), "No findings: all 20 checks passed.\n");
  EXPECT_EQ(DiagnoseExitCode(r), kExitOk);
}

// A check without its inputs is listed as skipped, with why, and never
// counted as passed; when none ran, nothing is said to have passed and the
// exit code asks the caller to look.
TEST(DiagnoseText, SkippedChecksAreListedNotPassed) {
  roced::v1::DiagnoseResponse r;
  auto* k = r.add_skipped();
  k->set_check("pfc_dscp");
  k->set_reason("the kernel state (DCB, ECN, rdma_cm, MTU) of no RoCE netdev could be read");
  r.set_checks_run(3);
  std::string text = DiagnoseText(r);
  EXPECT_THAT(text, HasSubstr("skipped  pfc_dscp: the kernel state"));
  EXPECT_THAT(text, HasSubstr("No findings in the 3 checks that ran; 1 skipped (above).\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("passed")));
  EXPECT_EQ(DiagnoseExitCode(r), kExitOk);

  r.set_checks_run(0);
  text = DiagnoseText(r);
  EXPECT_THAT(text, HasSubstr("No check ran"));
  EXPECT_THAT(text, HasSubstr("nothing passed"));
  EXPECT_EQ(DiagnoseExitCode(r), kExitFindings);
}

}  // namespace
}  // namespace roced::ctl
