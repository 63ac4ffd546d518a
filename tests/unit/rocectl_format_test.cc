#include "tools/rocectl/format.h"

#include <yaml-cpp/yaml.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace roced::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

roced::v1::NodeState SampleState() {
  roced::v1::NodeState s;
  s.set_hostname("node1");
  auto* d = s.add_devices();
  d->set_name("mlx5_2");
  d->set_pci_address("0000:af:00.0");
  d->mutable_pcie()->set_current_speed_gts(8);
  d->mutable_pcie()->set_current_width(4);
  d->mutable_pcie()->set_max_speed_gts(16);
  d->mutable_pcie()->set_max_width(16);
  d->mutable_pcie()->set_degraded(true);
  auto* p = d->add_ports();
  p->set_number(1);
  p->set_state(roced::v1::PORT_STATE_ACTIVE);
  p->set_link_layer("Ethernet");
  p->set_netdev("ens2f0");
  auto* g = p->add_gids();
  g->set_index(0);
  g->set_type(roced::v1::GID_TYPE_ROCE_V1);
  g->set_gid("fe80:0000:0000:0000:0000:0000:0000:0001");
  return s;
}

TEST(StatusTable, FlagsDegradedPcieAndMissingRoceV2Gid) {
  std::string t = StatusTable(SampleState());
  EXPECT_THAT(t, HasSubstr("PCIe link degraded: 8 GT/s x4, card supports 16 GT/s x16"));
  EXPECT_THAT(t, HasSubstr("no RoCE v2 GID"));
  EXPECT_THAT(t, HasSubstr("RoCE v1"));
}

TEST(StatusTable, HealthyDeviceHasNoWarnings) {
  auto s = SampleState();
  s.mutable_devices(0)->mutable_pcie()->set_degraded(false);
  s.mutable_devices(0)->mutable_ports(0)->mutable_gids(0)->set_type(roced::v1::GID_TYPE_ROCE_V2);
  EXPECT_THAT(StatusTable(s), Not(HasSubstr("Warnings")));
}

TEST(StatusTable, ShowsTheAgentsWarningsAndWhoAppliedTheConfig) {
  auto s = SampleState();
  s.mutable_agent()->add_warnings("gRPC on 127.0.0.1:7471 is plaintext and unauthenticated (--insecure)");
  s.mutable_config()->set_generation(4);
  s.mutable_config()->set_source(roced::v1::CONFIG_SOURCE_GRPC);
  s.mutable_config()->set_applied_by("controller.example");
  const std::string t = StatusTable(s);
  EXPECT_THAT(t, HasSubstr("  ! gRPC on 127.0.0.1:7471 is plaintext and unauthenticated (--insecure)"));
  EXPECT_THAT(t, HasSubstr("Config:  generation 4 from gRPC (controller.example), mode"));
}

TEST(Output, JsonIsProto3MappingAndYamlIsTheSameDocument) {
  auto s = SampleState();
  std::string json = ToJson(s);
  EXPECT_THAT(json, HasSubstr("\"pciAddress\": \"0000:af:00.0\""));
  EXPECT_THAT(json, HasSubstr("\"type\": \"GID_TYPE_ROCE_V1\""));
  YAML::Node y = YAML::Load(ToYaml(s));
  EXPECT_EQ(y["devices"][0]["pcie"]["currentWidth"].as<int>(), 4);
  EXPECT_EQ(y["hostname"].as<std::string>(), "node1");
}

TEST(Output, ParseOutputRejectsUnknownFormats) {
  EXPECT_TRUE(ParseOutput("json").ok());
  auto bad = ParseOutput("xml");
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("table, json, yaml"));
}

}  // namespace
}  // namespace roced::ctl
