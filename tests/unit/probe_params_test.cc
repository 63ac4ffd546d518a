// Requests to probe parameters without an agent: defaults from the config
// and then probe_limits, the ranges, the peer's address, the local port.
#include "probe/params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "probe/reason.h"

namespace roced::probe {
namespace {

using ::testing::HasSubstr;

roced::v1::ProbeConfig Config() {
  roced::v1::ProbeConfig pc;
  auto* peer = pc.add_peers();
  peer->set_name("node2");
  peer->set_address("10.0.0.2:7471");
  return pc;
}

roced::v1::RunProbeRequest Request(const std::string& peer,
                                   roced::v1::ProbeKind kind = roced::v1::PROBE_KIND_LATENCY) {
  roced::v1::RunProbeRequest r;
  r.set_peer(peer);
  r.set_kind(kind);
  return r;
}

TEST(ResolveParams, LatencyDefaultsComeFromTheConfigThenTheLimits) {
  absl::StatusOr<ProbeParams> p = ResolveParams(Request("node2"), Config());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->peer, "node2");
  EXPECT_EQ(p->address, "10.0.0.2:7471");
  EXPECT_EQ(p->kind, roced::v1::PROBE_KIND_LATENCY);
  EXPECT_EQ(p->size, 2u);
  EXPECT_EQ(p->iterations, 1000u);
  EXPECT_FALSE(p->traffic_class.has_value());

  roced::v1::ProbeConfig pc = Config();
  pc.mutable_latency()->set_size(64);
  pc.mutable_latency()->set_iterations(10);
  pc.set_traffic_class(106);
  p = ResolveParams(Request("node2", roced::v1::PROBE_KIND_UNSPECIFIED), pc);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kind, roced::v1::PROBE_KIND_LATENCY);  // unspecified: latency
  EXPECT_EQ(p->size, 64u);
  EXPECT_EQ(p->iterations, 10u);
  EXPECT_EQ(p->traffic_class, 106u);

  roced::v1::RunProbeRequest req = Request("node2");
  req.set_size(8);
  req.set_iterations(5);
  req.set_traffic_class(0);
  req.set_busy_poll(true);
  p = ResolveParams(req, pc);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->size, 8u);
  EXPECT_EQ(p->iterations, 5u);
  EXPECT_EQ(p->traffic_class, 0u);  // the request's, even 0
  EXPECT_TRUE(p->busy_poll);
}

TEST(ResolveParams, BandwidthIsTimedByDefaultAndCountedWithIterations) {
  roced::v1::ProbeConfig pc = Config();
  absl::StatusOr<ProbeParams> p =
      ResolveParams(Request("node2", roced::v1::PROBE_KIND_BANDWIDTH), pc);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->size, 65536u);
  EXPECT_EQ(p->duration, absl::Seconds(2));
  EXPECT_EQ(p->qps, 1u);
  EXPECT_EQ(p->outstanding, 128u);
  EXPECT_EQ(p->messages, 0u);

  pc.mutable_bandwidth()->set_outstanding(32);
  pc.mutable_bandwidth()->set_qps(4);
  pc.mutable_bandwidth()->mutable_duration()->set_seconds(5);
  roced::v1::RunProbeRequest req = Request("node2", roced::v1::PROBE_KIND_BANDWIDTH);
  req.set_iterations(500);
  p = ResolveParams(req, pc);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->messages, 500u);
  EXPECT_EQ(p->duration, absl::Seconds(30));  // a counted run: only bounded
  EXPECT_EQ(p->qps, 4u);
  EXPECT_EQ(p->outstanding, 32u);
  p = ResolveParams(Request("node2", roced::v1::PROBE_KIND_BANDWIDTH), pc);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->duration, absl::Seconds(5));
}

TEST(ResolveParams, OutOfRangeFieldsAreInvalidNamingTheFieldAndRange) {
  auto expect_invalid = [](const roced::v1::RunProbeRequest& req, const std::string& message) {
    absl::StatusOr<ProbeParams> p = ResolveParams(req, Config());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(p.status().message(), HasSubstr(message));
  };
  expect_invalid(Request(""), "peer: required");
  expect_invalid(Request("node2", static_cast<roced::v1::ProbeKind>(7)), "kind: unknown probe kind 7");
  auto r = Request("node2");
  r.set_size(0);
  expect_invalid(r, "size: 0 is out of range; allowed 1-1048576");
  r = Request("node2");
  r.set_iterations(1000001);
  expect_invalid(r, "iterations: 1000001 is out of range; allowed 1-1000000");
  r = Request("node2");
  r.set_qps(2);
  expect_invalid(r, "qps: latency probes use one queue pair");
  r = Request("node2");
  r.set_traffic_class(256);
  expect_invalid(r, "traffic_class: 256 is out of range; allowed 0-255 (ToS)");
  r = Request("node2", roced::v1::PROBE_KIND_BANDWIDTH);
  r.mutable_duration()->set_seconds(31);
  expect_invalid(r, "duration: 31s is out of range; allowed 100ms to 30s");
  r = Request("node2", roced::v1::PROBE_KIND_BANDWIDTH);
  r.set_qps(17);
  expect_invalid(r, "qps: 17 is out of range; allowed 1-16");
  r = Request("node2", roced::v1::PROBE_KIND_BANDWIDTH);
  r.set_size(1u << 25);
  expect_invalid(r, "size: 33554432 is out of range; allowed 1-16777216");
  r = Request("node2", roced::v1::PROBE_KIND_BANDWIDTH);
  r.set_iterations(0);
  expect_invalid(r, "iterations: 0 is out of range; allowed 1-1000000");
}

TEST(ResolveParams, APeerIsAConfiguredNameOrAHostPort) {
  absl::StatusOr<ProbeParams> p = ResolveParams(Request("10.0.0.9:7471"), Config());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->peer, "10.0.0.9:7471");
  EXPECT_EQ(p->address, "10.0.0.9:7471");
  p = ResolveParams(Request("node9"), Config());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(p.status().message(),
            "unknown peer 'node9': not in probes.peers (node2) and not a host:port address");
  p = ResolveParams(Request("node9"), roced::v1::ProbeConfig());
  EXPECT_THAT(p.status().message(), HasSubstr("(none configured)"));
  for (const char* bad : {"host:", ":7471", "host:0", "host:65536", "host:x", "host:+80", "fd00::2:7471"}) {
    EXPECT_EQ(ResolveParams(Request(bad), Config()).status().code(), absl::StatusCode::kNotFound)
        << bad;
  }
}

TEST(MaxConcurrent, IsTheConfigsElseFour) {
  roced::v1::ProbeConfig pc;
  EXPECT_EQ(MaxConcurrent(pc), 4u);
  pc.set_max_concurrent(1);
  EXPECT_EQ(MaxConcurrent(pc), 1u);
}

roced::v1::NodeState TwoDevices() {
  roced::v1::NodeState state;
  for (const char* name : {"mlx5_0", "mlx5_1"}) {
    auto* dev = state.add_devices();
    dev->set_name(name);
    dev->set_numa_node(name[5] == '0' ? 0 : 1);
    dev->set_pci_address(name[5] == '0' ? "0000:3b:00.0" : "0000:3b:00.1");
    auto* port = dev->add_ports();
    port->set_number(1);
    port->set_state(roced::v1::PORT_STATE_ACTIVE);
    port->set_link_layer("Ethernet");
    port->set_netdev(name[5] == '0' ? "eth0" : "eth1");
    auto* gid = port->add_gids();
    gid->set_type(roced::v1::GID_TYPE_ROCE_V2);
    gid->set_ip_address(name[5] == '0' ? "10.0.0.1" : "10.0.1.1");
  }
  return state;
}

TEST(ResolveLocalPort, IsTheFirstActiveRoceV2PortOrTheConfiguredDevice) {
  roced::v1::NodeState state = TwoDevices();
  absl::StatusOr<LocalPort> lp = ResolveLocalPort(state);
  ASSERT_TRUE(lp.ok()) << lp.status();
  EXPECT_EQ(lp->device, "mlx5_0");
  EXPECT_EQ(lp->port, 1u);
  EXPECT_EQ(lp->netdev, "eth0");
  EXPECT_EQ(lp->numa_node, 0);
  EXPECT_FALSE(lp->hugepages);
  EXPECT_FALSE(lp->has_default_tos);

  state.mutable_devices(0)->mutable_ports(0)->set_state(roced::v1::PORT_STATE_DOWN);
  lp = ResolveLocalPort(state);
  ASSERT_TRUE(lp.ok());
  EXPECT_EQ(lp->device, "mlx5_1");

  state = TwoDevices();
  state.mutable_devices(0)->mutable_ports(0)->mutable_gids(0)->set_ip_address("fe80::1");
  EXPECT_EQ(ResolveLocalPort(state)->device, "mlx5_1");  // no IPv4 RoCE v2 GID

  state = TwoDevices();
  state.mutable_config()->mutable_desired()->mutable_probes()->set_device("mlx5_1");
  EXPECT_EQ(ResolveLocalPort(state)->device, "mlx5_1");
}

TEST(ResolveLocalPort, NoUsablePortIsDeviceUnavailable) {
  absl::StatusOr<LocalPort> lp = ResolveLocalPort(roced::v1::NodeState());
  EXPECT_EQ(lp.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReasonOf(lp.status()), "device_unavailable");
  EXPECT_EQ(lp.status().message(), "no active RoCE port with an IPv4 RoCE v2 GID");
  roced::v1::NodeState state = TwoDevices();
  state.mutable_config()->mutable_desired()->mutable_probes()->set_device("mlx5_7");
  lp = ResolveLocalPort(state);
  EXPECT_EQ(ReasonOf(lp.status()), "device_unavailable");
  EXPECT_EQ(lp.status().message(),
            "probes.device mlx5_7 has no active RoCE port with an IPv4 RoCE v2 GID");
}

TEST(ResolveLocalPort, HugepagesAndDefaultTosComeFromTheDesiredConfig) {
  roced::v1::NodeState state = TwoDevices();
  roced::v1::NodeConfig* config = state.mutable_config()->mutable_desired();
  auto* hp = config->add_hugepages();
  hp->set_size("1Gi");
  hp->set_count(4);
  EXPECT_FALSE(ResolveLocalPort(state)->hugepages);  // 1 GiB pages are not used
  hp = config->add_hugepages();
  hp->set_size("2Mi");
  hp->set_count(64);
  hp->set_numa_node(1);
  EXPECT_FALSE(ResolveLocalPort(state)->hugepages);  // another node's pool
  hp->clear_numa_node();
  EXPECT_TRUE(ResolveLocalPort(state)->hugepages);  // the node-wide pool
  auto* iface = config->add_interfaces();
  iface->mutable_match()->set_pci("0000:3B:00.0");  // case-insensitive
  iface->mutable_roce()->set_default_tos(106);
  absl::StatusOr<LocalPort> lp = ResolveLocalPort(state);
  ASSERT_TRUE(lp.ok());
  EXPECT_TRUE(lp->has_default_tos);
  EXPECT_EQ(lp->default_tos, 106u);
}

}  // namespace
}  // namespace roced::probe
