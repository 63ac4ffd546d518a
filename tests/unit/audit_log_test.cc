// The audit log: each record one valid JSON line whatever the caller sent,
// rotation at the size bound, and a write failure counted without failing
// the call it records.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/api/audit_log.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "test_util.h"

namespace roced::agent {
namespace {

AuditRecord Record(const std::string& identity, const std::string& summary = "") {
  return {absl::FromUnixMillis(1764605400123), identity, "tls", "admin", "/roced.v1.Agent/ApplyConfig", "OK", "",
          7, summary};
}

TEST(AuditLine, IsOneValidJsonLineWhateverTheCallerSent) {
  const std::string nasty = "evil\"\n{\"code\":\"OK\"}\\\x01\xff\xfe";
  const std::string line = AuditLine(Record(nasty, "eth0 mtu: 1500 -> 9000"));
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  google::protobuf::Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &parsed).ok()) << line;
  const auto& f = parsed.fields();
  EXPECT_EQ(f.at("time").string_value(), "2025-12-01T16:10:00.123Z");
  EXPECT_EQ(f.at("identity").string_value(), "evil\"\n{\"code\":\"OK\"}\\\x01\u00ff\u00fe");
  EXPECT_EQ(f.at("code").string_value(), "OK");
  EXPECT_EQ(f.at("generation").number_value(), 7);
  EXPECT_EQ(f.at("summary").string_value(), "eth0 mtu: 1500 -> 9000");
  EXPECT_EQ(f.count("message"), 0u);  // empty fields are left out
}

TEST(AuditLine, LongFieldsAreCut) {
  const std::string line = AuditLine(Record(std::string(10000, 'a')));
  EXPECT_LT(line.size(), 2500u);
  EXPECT_THAT(line, ::testing::HasSubstr("aaa...\""));
}

TEST(AuditLog, RotatesAtTheBoundKeepingOneOldFile) {
  const std::string dir = test_util::MakeTempDir("roced-audit");
  const std::string path = dir + "/audit.log";
  const size_t one = AuditLine(Record("a")).size();
  AuditLog log(path, 3 * one);
  for (int i = 0; i < 7; ++i) log.Append(Record("a"));
  // 3 + 3 + 1: the current file holds the newest, audit.log.1 the three
  // before; older ones are gone.
  EXPECT_EQ(std::filesystem::file_size(path), one);
  EXPECT_EQ(std::filesystem::file_size(path + ".1"), 3 * one);
  EXPECT_FALSE(std::filesystem::exists(path + ".2"));
  EXPECT_EQ(log.failures(), 0u);
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::filesystem::remove_all(dir);
}

TEST(AuditLog, ASymlinkAtThePathIsRefusedNotWrittenThrough) {
  const std::string dir = test_util::MakeTempDir("roced-audit");
  const std::string target = dir + "/elsewhere";
  std::filesystem::create_symlink(target, dir + "/audit.log");
  AuditLog log(dir + "/audit.log");
  log.Append(Record("a"));
  EXPECT_EQ(log.failures(), 1u);
  EXPECT_FALSE(std::filesystem::exists(target));
  std::filesystem::remove_all(dir);
}

TEST(AuditLog, AnUnwritablePathIsCountedNotThrown) {
  AuditLog log("/nonexistent-dir/audit.log");
  log.Append(Record("a"));
  log.Append(Record("b"));
  EXPECT_EQ(log.failures(), 2u);
  AuditLog none("");
  none.Append(Record("a"));
  EXPECT_EQ(none.failures(), 0u);
}

}  // namespace
}  // namespace roced::agent
