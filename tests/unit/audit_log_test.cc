// The audit log: each record one valid JSON line whatever the caller sent,
// rotation at the size bound, a write failure counted without failing the
// call it records, and refusals kept apart from changes, aggregated and
// rate-limited so that no volume of them pushes a change out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/time.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "agent/api/audit_log.h"
#include "agent/api/refusal_log.h"
#include "metrics/families.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
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

TEST(AuditLog, AFifoAtThePathIsRefusedNotWaitedOn) {
  const std::string dir = test_util::MakeTempDir("roced-audit");
  ASSERT_EQ(::mkfifo((dir + "/audit.log").c_str(), 0600), 0);
  AuditLog log(dir + "/audit.log");
  const absl::Time start = absl::Now();
  log.Append(Record("a"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(log.failures(), 1u);
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

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

constexpr absl::Time kStart = absl::FromUnixSeconds(1764605400);

AuditRecord Refusal(const std::string& identity, absl::Time time,
                    const std::string& method = "/roced.v1.Agent/GetState") {
  return {time, identity, "insecure", "none", method, "UNAUTHENTICATED", "plaintext callers are not accepted", 0,
          ""};
}

// The attack: ~142k unauthenticated GetState calls (55 s at 2,500-3,000/s)
// pushed an admin's ApplyConfig out of audit.log and audit.log.1 and grew
// stderr to 33 MB. Here 200k refusals at 3,000/s (67 s of record time),
// three in four from one caller and every fourth from a new one (an
// attacker varying its identity), with the defaults of the agent.
TEST(AuditLog, TwoHundredThousandRefusalsKeepTheLastChangeAndStayWithinBounds) {
  const std::string dir = test_util::MakeTempDir("roced-audit");
  const std::string path = dir + "/audit.log";
  prometheus::Registry registry;
  const AuditLogOptions defaults;
  {
    AuditLog log(path);
    log.RegisterMetrics(metrics::ApiFamilies::Register(registry).refusals);
    const std::string change = AuditLine(Record("admin.example", "eth0 qos.pfc: 3 -> 3,4"));
    log.Append(Record("admin.example", "eth0 qos.pfc: 3 -> 3,4"));
    ::testing::internal::CaptureStderr();
    constexpr int kCalls = 200000;
    for (int i = 0; i < kCalls; ++i) {
      const absl::Time t = kStart + absl::Seconds(i) / 3000;
      const std::string who = i % 4 == 3 ? absl::StrCat("insecure ipv4:10.1.", i / 256 % 256, ".", i % 256)
                                         : "insecure ipv4:192.0.2.7";
      log.Refuse(Refusal(who, t));
    }
    log.FlushRefusals(kStart + absl::Seconds(kCalls / 3000 + 1));
    const std::string stderr_text = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(log.refusals().total(), static_cast<uint64_t>(kCalls));

    // The change is the whole of audit.log, and nothing rotated it away.
    const std::string audit = Slurp(path);
    EXPECT_TRUE(audit == change) << "audit.log holds " << audit.size() << " bytes, not the change alone";
    EXPECT_FALSE(std::filesystem::exists(path + ".1"));

    // 67 s are two intervals: at most 2 * (32 + 1) lines each in the file,
    // 32 + 2 on stderr.
    const size_t intervals = 2;
    const std::vector<std::string> lines = Lines(Slurp(dir + "/refusals.log"));
    EXPECT_LE(lines.size(), intervals * 2 * (defaults.refusal_max_keys + 1));
    EXPECT_GT(lines.size(), 2u);
    EXPECT_FALSE(std::filesystem::exists(dir + "/refusals.log.1"));
    EXPECT_LE(Lines(stderr_text).size(), intervals * (defaults.refusal_max_keys + 2)) << stderr_text.substr(0, 2000);
    EXPECT_LT(stderr_text.size(), 64u << 10);
    std::cout << "200k refusals: refusals.log " << lines.size() << " lines, " << Slurp(dir + "/refusals.log").size()
              << " bytes; stderr " << Lines(stderr_text).size() << " lines, " << stderr_text.size() << " bytes\n";
    // The one caller's refusals are all accounted for: one logged and a
    // summary per interval.
    uint64_t seen = 0;
    for (const std::string& line : lines) {
      if (line.find("\"identity\":\"insecure ipv4:192.0.2.7\"") == std::string::npos) continue;
      google::protobuf::Struct parsed;
      ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &parsed).ok()) << line;
      const auto& f = parsed.fields();
      seen += f.count("repeated") ? static_cast<uint64_t>(f.at("repeated").number_value()) : 1;
    }
    EXPECT_EQ(seen, static_cast<uint64_t>(kCalls - kCalls / 4));
    EXPECT_THAT(Slurp(dir + "/refusals.log"), ::testing::HasSubstr("\"identity\":\"(other callers)\""));
    // Every refusal is counted, none lost to the rate limit.
    EXPECT_THAT(prometheus::TextSerializer().Serialize(registry.Collect()),
                ::testing::HasSubstr("roced_api_refusals_total{code=\"UNAUTHENTICATED\",method=\"roced.v1.Agent/"
                                     "GetState\"} 200000"));
  }
  std::filesystem::remove_all(dir);
}

TEST(RefusalLog, TheFirstRefusalIsWrittenAtOnceAndRepeatsOncePerInterval) {
  const std::string dir = test_util::MakeTempDir("roced-audit");
  LineFile file(dir + "/refusals.log", 1 << 20);
  RefusalLog log(&file, absl::Seconds(60), 2);
  log.Refuse(Refusal("a", kStart));
  EXPECT_EQ(Lines(Slurp(file.path())).size(), 1u);  // at once
  log.Refuse(Refusal("a", kStart + absl::Seconds(1)));
  log.Refuse(Refusal("a", kStart + absl::Seconds(2)));
  log.Refuse(Refusal("b", kStart + absl::Seconds(3)));
  log.Refuse(Refusal("c", kStart + absl::Seconds(4)));  // past 2 keys: "other"
  log.Refuse(Refusal("d", kStart + absl::Seconds(5)));
  log.Refuse(Refusal("a", kStart + absl::Seconds(6), "/roced.v1.Agent/ApplyConfig"));
  EXPECT_EQ(Lines(Slurp(file.path())).size(), 3u);  // a, b, other
  // The next interval starts with the previous one's summaries, then its own first.
  log.Refuse(Refusal("a", kStart + absl::Seconds(61)));
  const std::vector<std::string> lines = Lines(Slurp(file.path()));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_THAT(lines[0], ::testing::HasSubstr("\"identity\":\"a\""));
  EXPECT_THAT(lines[0], ::testing::HasSubstr("\"message\":\"plaintext callers are not accepted\""));
  EXPECT_THAT(lines[1], ::testing::HasSubstr("\"identity\":\"b\""));
  EXPECT_THAT(lines[2], ::testing::HasSubstr("\"identity\":\"(other callers)\""));
  EXPECT_THAT(lines[3], ::testing::HasSubstr("\"identity\":\"a\""));
  EXPECT_THAT(lines[3], ::testing::HasSubstr("\"repeated\":2,\"since\":\"2025-12-01T16:10:00.000Z\""));
  EXPECT_THAT(lines[4], ::testing::HasSubstr("\"identity\":\"(other callers)\",\"transport\":\"\","
                                             "\"roles\":\"none\",\"method\":\"*\",\"code\":\"*\",\"repeated\":2"));
  EXPECT_THAT(lines[5], ::testing::HasSubstr("\"identity\":\"a\""));
  EXPECT_THAT(lines[5], ::testing::Not(::testing::HasSubstr("repeated")));
  EXPECT_EQ(log.total(), 8u);
  std::filesystem::remove_all(dir);
}

TEST(RefusalLog, AHugeIdentityIsCutInTheKeyAndTheLine) {
  const std::string dir = test_util::MakeTempDir("roced-audit");
  LineFile file(dir + "/refusals.log", 1 << 20);
  RefusalLog log(&file, absl::Seconds(60), 32);
  AuditRecord r = Refusal(std::string(100000, 'x'), kStart);
  r.message = std::string(100000, 'm');
  ::testing::internal::CaptureStderr();
  log.Refuse(r);
  const std::string stderr_text = ::testing::internal::GetCapturedStderr();
  EXPECT_LT(Slurp(file.path()).size(), 1200u);
  EXPECT_LT(stderr_text.size(), 1000u);
  std::filesystem::remove_all(dir);
}

void SetMtime(const std::string& path, absl::Time t) {
  struct timeval tv[2] = {{absl::ToTimeT(t), 0}, {absl::ToTimeT(t), 0}};
  ASSERT_EQ(::utimes(path.c_str(), tv), 0) << path;
}

TEST(AuditLog, RefusalFilesOlderThan30DaysAreDeletedChangesAreKept) {
  const std::string dir = test_util::MakeTempDir("roced-audit");
  const absl::Time now = absl::Now();
  for (const char* name : {"audit.log", "audit.log.1", "refusals.log", "refusals.log.1"}) {
    std::ofstream(dir + "/" + name) << "{}\n";
    SetMtime(dir + "/" + name, now - absl::Hours(24 * 31));
  }
  {
    AuditLog log(dir + "/audit.log");
    log.Append(Record("admin"));
    log.Refuse(Refusal("a", now));
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/audit.log.1"));
  EXPECT_THAT(Slurp(dir + "/audit.log"), ::testing::StartsWith("{}\n"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/refusals.log.1"));
  EXPECT_THAT(Lines(Slurp(dir + "/refusals.log")), ::testing::ElementsAre(::testing::HasSubstr("\"identity\":\"a\"")));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace roced::agent
