#include "util/args.h"

#include <gtest/gtest.h>

namespace roced::util {
namespace {

struct Parsed {
  std::string s = "default";
  bool b = false;
  uint64_t n = 7;
  absl::Duration d = absl::Seconds(1);
};

absl::Status ParseInto(Parsed* p, std::vector<const char*> argv, std::vector<std::string>* pos,
                       bool stop = false) {
  ArgParser parser;
  parser.AddString("name", &p->s, "NAME", "A name.", 'n');
  parser.AddBool("flag", &p->b, "A flag.");
  parser.AddUint("count", &p->n, "N", "A count.");
  parser.AddDuration("wait", &p->d, "DUR", "A wait.");
  argv.insert(argv.begin(), "prog");
  return parser.Parse(static_cast<int>(argv.size()), argv.data(), 1, stop, pos);
}

TEST(ArgParser, ParsesLongShortEqualsAndSeparateValues) {
  Parsed p;
  std::vector<std::string> pos;
  ASSERT_TRUE(ParseInto(&p, {"--name=x", "--flag", "--count", "12", "--wait=250ms", "rest"}, &pos).ok());
  EXPECT_EQ(p.s, "x");
  EXPECT_TRUE(p.b);
  EXPECT_EQ(p.n, 12u);
  EXPECT_EQ(p.d, absl::Milliseconds(250));
  EXPECT_EQ(pos, std::vector<std::string>{"rest"});
  Parsed q;
  ASSERT_TRUE(ParseInto(&q, {"-n", "y"}, &pos).ok());
  EXPECT_EQ(q.s, "y");
  Parsed r;
  ASSERT_TRUE(ParseInto(&r, {"-nz"}, &pos).ok());
  EXPECT_EQ(r.s, "z");
}

TEST(ArgParser, StopsAtFirstPositionalForSubcommands) {
  Parsed p;
  std::vector<std::string> pos;
  ASSERT_TRUE(ParseInto(&p, {"--flag", "status", "--name", "late"}, &pos, true).ok());
  EXPECT_EQ(pos, (std::vector<std::string>{"status", "--name", "late"}));
  EXPECT_EQ(p.s, "default");
}

TEST(ArgParser, ErrorsNameTheFlag) {
  Parsed p;
  std::vector<std::string> pos;
  auto s = ParseInto(&p, {"--bogus"}, &pos);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--bogus"), std::string::npos);
  s = ParseInto(&p, {"--count", "x"}, &pos);
  EXPECT_NE(s.message().find("--count"), std::string::npos);
  s = ParseInto(&p, {"--wait", "soon"}, &pos);
  EXPECT_NE(s.message().find("--wait"), std::string::npos);
  s = ParseInto(&p, {"--name"}, &pos);
  EXPECT_NE(s.message().find("needs a value"), std::string::npos);
}

TEST(ArgParser, HelpListsEveryFlagWithDefault) {
  Parsed p;
  ArgParser parser;
  parser.AddString("name", &p.s, "NAME", "A name.", 'n');
  parser.AddDuration("wait", &p.d, "DUR", "A wait.");
  std::string help = parser.Help();
  EXPECT_NE(help.find("-n, --name NAME"), std::string::npos);
  EXPECT_NE(help.find("Default: default."), std::string::npos);
  EXPECT_NE(help.find("Default: 1s."), std::string::npos);
}

}  // namespace
}  // namespace roced::util
