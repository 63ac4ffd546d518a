// The static inventory: what an operator writes is read as members (the
// pinglist computed from them), and every kind of bad line is refused
// naming its line, its column and what is allowed, with nothing used.
#include "mesh/inventory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace roced::mesh {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(std::string_view text) {
  absl::StatusOr<std::vector<Member>> got = ParseInventory(text);
  EXPECT_FALSE(got.ok()) << "accepted: " << text;
  if (got.ok()) return "";
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(got.status().message());
}

TEST(MeshInventory, ReadsMembersWithCommentsBlanksPlaceholdersAndIpv6) {
  const std::string text =
      "# NAME     ADDRESS            TOR      POD\n"
      "node-1     10.0.0.1:7471      tor-a    pod-a   # rack 1\n"
      "\n"
      "   \t \n"
      "node-2\t[fd00::2]:7471\ttor-a\tpod-a\r\n"
      "node-3     node-3.dc:7471     -        pod-b\n"
      "node-4     10.0.0.4:1\n"
      "node-5     10.0.0.5:65535     tor-b";  // no newline at the end
  absl::StatusOr<std::vector<Member>> got = ParseInventory(text);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 5u);
  const std::vector<Member>& m = *got;
  EXPECT_EQ(m[0].name, "node-1");
  EXPECT_EQ(m[0].address, "10.0.0.1:7471");
  EXPECT_EQ(m[0].tor, "tor-a");
  EXPECT_EQ(m[0].pod, "pod-a");
  EXPECT_EQ(m[1].address, "[fd00::2]:7471");
  EXPECT_EQ(m[1].pod, "pod-a");  // the CR is not part of it
  EXPECT_EQ(m[2].tor, "");       // "-": from LLDP, else a ToR of its own
  EXPECT_EQ(m[2].pod, "pod-b");
  EXPECT_EQ(m[3].tor, "");
  EXPECT_EQ(m[3].pod, "");
  EXPECT_EQ(m[4].tor, "tor-b");
}

TEST(MeshInventory, AnEmptyOrCommentOnlyFileHasNoMembers) {
  for (const char* text : {"", "\n\n", "# nobody yet\n   # still nobody\n"}) {
    absl::StatusOr<std::vector<Member>> got = ParseInventory(text);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->empty());
  }
}

TEST(MeshInventory, ThePinglistIsComputedFromWhatItReads) {
  std::string text;
  for (int t = 0; t < 3; ++t) {
    for (int h = 0; h < 4; ++h) absl::StrAppend(&text, "h", t, h, " 10.0.", t, ".", h, ":7471 tor", t, "\n");
  }
  absl::StatusOr<std::vector<Member>> members = ParseInventory(text);
  ASSERT_TRUE(members.ok()) << members.status();
  absl::StatusOr<Pinglist> list = ComputePinglist("h00", *members, PinglistOptions{});
  ASSERT_TRUE(list.ok()) << list.status();
  size_t same_tor = 0;
  for (const PinglistEntry& e : list->entries) same_tor += e.scope == PeerScope::kSameTor;
  EXPECT_EQ(same_tor, 3u);  // h01, h02, h03
}

TEST(MeshInventory, WrongColumnCountsAreRefusedWithTheLine) {
  EXPECT_EQ(ErrorOf("a 10.0.0.1:1\nlonely\n"), "inventory line 2: 1 column(s); expected NAME ADDRESS [TOR [POD]]");
  EXPECT_THAT(ErrorOf("a 10.0.0.1:1 t p extra\n"), HasSubstr("inventory line 1: 5 column(s)"));
}

TEST(MeshInventory, BadAddressesAreRefusedNamingTheColumnAndTheRange) {
  for (const char* address : {"10.0.0.1", "10.0.0.1:", ":7471", "10.0.0.1:0", "10.0.0.1:65536", "10.0.0.1:+80",
                              "10.0.0.1:7x", "fd00::2:7471", "[fd00::2]", "[]:7471", "10.0.0.1:0000080"}) {
    const std::string error = ErrorOf(absl::StrCat("# header\nnode ", address, " tor\n"));
    EXPECT_EQ(error, absl::StrCat("inventory line 2, column 2 (ADDRESS): '", address,
                                  "' is not host:port with a port in [1, 65535] (IPv6: [host]:port)"))
        << address;
  }
}

TEST(MeshInventory, DuplicateNamesAreRefusedWithBothLines) {
  EXPECT_EQ(ErrorOf("a 10.0.0.1:1\nb 10.0.0.2:1\n\na 10.0.0.3:1\n"),
            "inventory line 4, column 1 (NAME): 'a' is already on line 1");
}

TEST(MeshInventory, FieldsAreBoundedAndPrintable) {
  const std::string longest(kMaxInventoryField, 't');
  ASSERT_TRUE(ParseInventory(absl::StrCat("a 10.0.0.1:1 ", longest, "\n")).ok());
  EXPECT_EQ(ErrorOf(absl::StrCat("a 10.0.0.1:1 ", longest, "t\n")),
            absl::StrCat("inventory line 1, column 3 (TOR): ", kMaxInventoryField + 1, " bytes; at most ",
                         kMaxInventoryField));
  EXPECT_EQ(ErrorOf("a 10.0.0.1:1 tor po\x01" "d\n"),
            "inventory line 1, column 4 (POD): byte 0x01 at offset 2; allowed: printable ASCII (0x21-0x7e)");
  EXPECT_THAT(ErrorOf("n\xc3\xa9 10.0.0.1:1\n"), HasSubstr("column 1 (NAME): byte 0xc3 at offset 1"));
  EXPECT_EQ(ErrorOf("- 10.0.0.1:1\n"), "inventory line 1, column 1 (NAME): '-' is not a name");
}

TEST(MeshInventory, TheFileAndTheMemberCountAreBounded) {
  EXPECT_EQ(ErrorOf(std::string(kMaxInventoryBytes + 1, '#')),
            absl::StrCat("inventory: ", kMaxInventoryBytes + 1, " bytes; at most ", kMaxInventoryBytes));
  std::string text;
  for (size_t i = 0; i <= kMaxInventoryMembers; ++i) absl::StrAppend(&text, "n", i, " h:1\n");
  ASSERT_LE(text.size(), kMaxInventoryBytes);
  EXPECT_EQ(ErrorOf(text), absl::StrCat("inventory line ", kMaxInventoryMembers + 1, ": more than ",
                                        kMaxInventoryMembers, " members"));
  text.resize(text.rfind('n'));  // the last line off: exactly the bound
  absl::StatusOr<std::vector<Member>> got = ParseInventory(text);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), kMaxInventoryMembers);
}

}  // namespace
}  // namespace roced::mesh
