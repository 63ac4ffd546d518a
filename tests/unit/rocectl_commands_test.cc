// rocectl's command table: every command has its help entry and a run, the
// top-level help lists each from the table, and the real binary refuses an
// unknown command with exit 2, naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tools/rocectl/commands.h"
#include "util/args.h"

namespace roced::ctl {
namespace {

using ::testing::HasSubstr;

TEST(CommandTable, EveryEntryHasSummaryUsageAndRun) {
  ASSERT_FALSE(Commands().empty());
  std::set<absl::string_view> names;
  for (const Command& c : Commands()) {
    SCOPED_TRACE(std::string(c.name));
    EXPECT_FALSE(c.name.empty());
    EXPECT_TRUE(names.insert(c.name).second) << "listed twice";
    EXPECT_FALSE(c.summary.empty());
    EXPECT_TRUE(c.usage == c.name || absl::StartsWith(c.usage, absl::StrCat(c.name, " ")))
        << "usage does not start with the name: " << c.usage;
    for (absl::string_view line : absl::StrSplit(c.summary, '\n')) {
      EXPECT_FALSE(line.empty());
      EXPECT_LE(line.size(), 75u) << line;
    }
    ASSERT_NE(c.register_flags, nullptr);
    util::ArgParser parser;
    EXPECT_TRUE(c.register_flags(&parser) != nullptr);
    EXPECT_EQ(FindCommand(c.name), &c);
  }
}

TEST(CommandTable, HoldsEveryCommand) {
  for (const char* name : {"status", "apply", "confirm", "counters", "probe", "probes", "diagnose", "mesh", "rollout",
                           "version", "help"}) {
    EXPECT_NE(FindCommand(name), nullptr) << name;
  }
  EXPECT_EQ(FindCommand("frobnicate"), nullptr);
}

TEST(CommandTable, HelpListsEachCommandWithItsBrief) {
  const std::string help = TopLevelHelp();
  for (const char* section : {"Usage: rocectl ", "\nCommands (", "\nOptions: ", "\nExit status: ", "\nExample: rocectl "}) {
    EXPECT_THAT(help, HasSubstr(section));
  }
  for (const Command& c : Commands()) {
    SCOPED_TRACE(std::string(c.name));
    EXPECT_FALSE(c.brief.empty());
    EXPECT_LE(c.brief.size(), 64u);
    EXPECT_THAT(help, HasSubstr(absl::StrCat("\n  ", c.name, " ")));
    EXPECT_THAT(help, HasSubstr(absl::StrCat(c.brief, "\n")));
  }
}

// The lines of `text` over the screen kHelpLines x kHelpColumns allows, and
// whether it has too many; "" when it fits.
std::string OverTheScreen(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::string over;
  if (lines.size() > kHelpLines) absl::StrAppend(&over, lines.size(), " lines\n");
  for (const std::string& line : lines) {
    if (line.size() > kHelpColumns) absl::StrAppend(&over, line.size(), " columns: ", line, "\n");
  }
  return over;
}

TEST(CommandTable, EveryCommandHelpFitsAScreenAndNamesAnExample) {
  for (const Command& c : Commands()) {
    SCOPED_TRACE(std::string(c.name));
    util::ArgParser own;
    (void)c.register_flags(&own);
    const std::string help = CommandHelp(c, own.Help());
    EXPECT_EQ(OverTheScreen(help), "") << help;
    // One example line, running this command.
    const size_t example = help.find("\nExample: rocectl ");
    ASSERT_NE(example, std::string::npos) << help;
    const std::string line = help.substr(example + 1, help.find('\n', example + 1) - example - 1);
    EXPECT_THAT(absl::StrCat(line, " "), HasSubstr(absl::StrCat(" ", c.name, " "))) << line;
    EXPECT_TRUE(absl::StartsWith(help, absl::StrCat("Usage: rocectl [OPTIONS] ", c.name))) << help;
    // Every flag of the command is on the page.
    for (const std::string& flag : own.FlagNames()) EXPECT_THAT(help, HasSubstr("--" + flag)) << flag;
  }
  EXPECT_EQ(OverTheScreen(TopLevelHelp()), "") << TopLevelHelp();
}

// Runs the built rocectl with `args`; returns its exit status and output
// (stdout and stderr together).
int RunRocectl(const std::string& args, std::string* output) {
  const std::string cmd = std::string(ROCED_BIN_DIR) + "/rocectl " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) output->append(buf, n);
  const int status = pclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Rocectl, UnknownCommandExits2NamingIt) {
  std::string out;
  EXPECT_EQ(RunRocectl("--socket /nonexistent/roced.sock frobnicate", &out), 2);
  EXPECT_EQ(out, "rocectl: unknown command 'frobnicate'\nTry 'rocectl --help'.\n");
}

// `--help` after a command describes it and does nothing else: the apply
// below names a socket nobody listens on, so running it would exit 1.
TEST(Rocectl, CommandHelpDescribesTheCommandAndRunsNothing) {
  std::string out;
  EXPECT_EQ(RunRocectl("--socket /nonexistent/roced.sock apply -f /nonexistent.yaml --help", &out), 0);
  EXPECT_THAT(out, HasSubstr("Usage: rocectl [OPTIONS] apply"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("not reachable")));
}

TEST(Rocectl, HelpIsTheTablesHelp) {
  for (const char* args : {"--help", "help", "-h"}) {
    std::string out;
    EXPECT_EQ(RunRocectl(args, &out), 0) << args;
    EXPECT_EQ(out, TopLevelHelp()) << args;
  }
  std::string options;
  EXPECT_EQ(RunRocectl("help options", &options), 0);
  EXPECT_THAT(options, HasSubstr("\nOPTIONS\n  --target HOST:PORT\n"));
}

// What the binary prints for `rocectl COMMAND --help` is the page the test
// above holds to the screen, for every command.
TEST(Rocectl, EveryCommandHelpIsItsPage) {
  for (const Command& c : Commands()) {
    if (!c.needs_agent) continue;  // help runs at once: `help --help` is the list
    std::string out;
    EXPECT_EQ(RunRocectl(absl::StrCat(c.name, " --help"), &out), 0) << c.name;
    util::ArgParser own;
    (void)c.register_flags(&own);
    EXPECT_EQ(out, CommandHelp(c, own.Help())) << c.name;
  }
}

TEST(DescribeRpcError, TellsAnUnreachableAgentFromOneThatAnsweredUnavailable) {
  const std::string where = "10.0.0.1:7471";
  EXPECT_EQ(DescribeRpcError(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                          "failed to connect to all addresses; last error: UNKNOWN: "
                                          "ipv4:10.0.0.1:7471: Failed to connect to remote host: Connection refused"),
                             where)
                .rfind("agent not reachable at 10.0.0.1:7471: ", 0),
            0u);
  EXPECT_EQ(DescribeRpcError(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                          "cannot journal the apply, nothing changed: write "
                                          "/var/lib/roced/apply-journal.json.tmp.7: No space left on device"),
                             where),
            "the agent at 10.0.0.1:7471 cannot do this now: cannot journal the apply, nothing changed: write "
            "/var/lib/roced/apply-journal.json.tmp.7: No space left on device");
}

}  // namespace
}  // namespace roced::ctl
