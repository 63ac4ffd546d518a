// ResolveStartupConfig: every combination of what the state directory holds,
// whether the config file is there and changed, and a provisional deadline
// before or after now, as a table.
#include "agent/core/config_lifecycle.h"

#include <gtest/gtest.h>

#include "util/proto_time.h"

namespace roced::agent {
namespace {

using roced::v1::AcceptedConfig;
using roced::v1::ConfigSource;

const absl::Time kNow = absl::FromUnixSeconds(1800000000);

AcceptedConfig Config(ConfigSource source, uint32_t mtu, const std::string& digest, uint64_t generation = 0) {
  AcceptedConfig a;
  a.set_source(source);
  a.set_path("/etc/roced/roced.yaml");
  a.set_file_digest(digest);
  a.set_generation(generation);
  a.mutable_config()->set_api_version("roced/v1");
  a.mutable_config()->add_interfaces()->set_mtu(mtu);
  return a;
}

// A provisional gRPC config (MTU 9000) over a file config (MTU 1500), with
// one prior value, whose deadline is `deadline`.
AcceptedConfig Provisional(uint64_t generation, absl::Time deadline) {
  AcceptedConfig a = Config(roced::v1::CONFIG_SOURCE_GRPC, 9000, "d1", generation);
  a.set_provisional(true);
  *a.mutable_confirm_deadline() = util::ToProto(deadline);
  *a.mutable_previous() = Config(roced::v1::CONFIG_SOURCE_FILE, 1500, "d1").config();
  roced::v1::PriorValue* p = a.add_prior();
  p->set_field("mtu");
  p->set_netdev("eth0");
  p->set_number(1500);
  return a;
}

struct Case {
  const char* name;
  std::optional<AcceptedConfig> persisted;
  std::optional<AcceptedConfig> file;
  // Expected: nothing at all, or what is accepted.
  bool none;
  ConfigSource source;
  uint32_t mtu;
  uint64_t base_generation;
  size_t restore;
};

std::vector<Case> Cases() {
  const AcceptedConfig file_d1 = Config(roced::v1::CONFIG_SOURCE_FILE, 2000, "d1");
  const AcceptedConfig file_d2 = Config(roced::v1::CONFIG_SOURCE_FILE, 3000, "d2");
  const AcceptedConfig grpc5 = Config(roced::v1::CONFIG_SOURCE_GRPC, 4000, "d1", 5);
  const AcceptedConfig filed5 = Config(roced::v1::CONFIG_SOURCE_FILE, 2000, "d1", 5);
  AcceptedConfig never = Config(roced::v1::CONFIG_SOURCE_UNSPECIFIED, 0, "", 3);
  never.clear_config();
  const AcceptedConfig live = Provisional(5, kNow + absl::Seconds(30));
  const AcceptedConfig expired = Provisional(5, kNow - absl::Seconds(1));
  using S = ConfigSource;
  return {
      {"fresh node, no file", std::nullopt, std::nullopt, true, S(), 0, 0, 0},
      {"fresh node, a file", std::nullopt, file_d1, false, roced::v1::CONFIG_SOURCE_FILE, 2000, 0, 0},
      {"gRPC config, file unchanged: resumed, same generation", grpc5, file_d1, false,
       roced::v1::CONFIG_SOURCE_GRPC, 4000, 4, 0},
      {"gRPC config, file edited since: the file wins, next generation", grpc5, file_d2, false,
       roced::v1::CONFIG_SOURCE_FILE, 3000, 5, 0},
      {"file config, file unchanged: same generation", filed5, file_d1, false,
       roced::v1::CONFIG_SOURCE_FILE, 2000, 4, 0},
      {"gRPC config, no file: resumed", grpc5, std::nullopt, false, roced::v1::CONFIG_SOURCE_GRPC, 4000, 4, 0},
      {"provisional, deadline ahead: resumed as it is", live, file_d1, false, roced::v1::CONFIG_SOURCE_GRPC,
       9000, 4, 0},
      {"provisional expired while down, file unchanged: previous config, priors restored", expired, file_d1,
       false, roced::v1::CONFIG_SOURCE_CONFIRM_TIMEOUT, 1500, 5, 1},
      {"provisional expired while down, file edited: the file, priors restored, generation forward", expired,
       file_d2, false, roced::v1::CONFIG_SOURCE_FILE, 3000, 5, 1},
      {"provisional expired while down, no file: previous config, priors restored", expired, std::nullopt,
       false, roced::v1::CONFIG_SOURCE_CONFIRM_TIMEOUT, 1500, 5, 1},
      {"state dir without a config, a file: generation continues", never, file_d1, false,
       roced::v1::CONFIG_SOURCE_FILE, 2000, 3, 0},
      {"state dir without a config, no file: nothing", never, std::nullopt, true, S(), 0, 0, 0},
  };
}

TEST(ResolveStartupConfig, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::optional<StartupChoice> got = ResolveStartupConfig(c.persisted, c.file, kNow);
    if (c.none) {
      EXPECT_FALSE(got.has_value());
      continue;
    }
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->accept.source(), c.source);
    ASSERT_EQ(got->accept.config().interfaces_size(), 1);
    EXPECT_EQ(got->accept.config().interfaces(0).mtu(), c.mtu);
    EXPECT_EQ(got->base_generation, c.base_generation);
    EXPECT_EQ(got->restore.size(), c.restore);
    EXPECT_FALSE(got->why.empty());
    // Generations never go backwards: what is accepted gets at least the
    // persisted generation.
    if (c.persisted) {
      EXPECT_GE(got->base_generation + 1, c.persisted->generation());
    }
  }
}

TEST(ResolveStartupConfig, TheDeadlineIsInclusive) {
  const AcceptedConfig at_now = Provisional(7, kNow);
  std::optional<StartupChoice> got = ResolveStartupConfig(at_now, std::nullopt, kNow);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->accept.source(), roced::v1::CONFIG_SOURCE_CONFIRM_TIMEOUT);
  EXPECT_FALSE(got->accept.provisional());
}

}  // namespace
}  // namespace roced::agent
