// The responder registry without gRPC: endpoints opened for initiators,
// their leases and the reaper pass (on an injected clock), the endpoint
// limit, release, unknown ids, the request checks and shutdown.
#include "probe/responder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "fake_probe_for_test.h"
#include "probe/reason.h"

namespace roced::probe {
namespace {

using ::testing::HasSubstr;

struct Rig {
  FakeEndpointBehaviour behaviour;
  FakeEndpointFactoryForTest factory{&behaviour};
  std::optional<absl::Status> local_error;
  LocalPort local;

  Rig() {
    local.device = "mlx5_0";
    local.port = 1;
    local.netdev = "eth0";
  }
  std::unique_ptr<ResponderRegistry> Make(size_t max_endpoints = 32, bool with_factory = true) {
    return std::make_unique<ResponderRegistry>(
        with_factory ? &factory : nullptr,
        [this]() -> absl::StatusOr<LocalPort> {
          if (local_error.has_value()) return *local_error;
          return local;
        },
        max_endpoints);
  }
};

roced::v1::OpenEndpointRequest OpenRequest(uint32_t lease_seconds = 60,
                                           roced::v1::ProbeKind kind = roced::v1::PROBE_KIND_LATENCY,
                                           int qps = 1) {
  roced::v1::OpenEndpointRequest req;
  req.set_initiator("node1");
  req.set_kind(kind);
  req.set_size(2);
  req.set_traffic_class(106);
  req.set_lease_seconds(lease_seconds);
  for (int i = 0; i < qps; ++i) {
    auto* qp = req.add_initiator_qps();
    qp->set_qpn(9 + i);
    qp->set_gid(std::string(16, '\x02'));
    qp->set_rkey(5);
    qp->set_length(2);
  }
  return req;
}

bool WaitFor(const std::function<bool()>& cond) {
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (absl::Now() < end) {
    if (cond()) return true;
    absl::SleepFor(absl::Milliseconds(5));  // poll: `cond`
  }
  return cond();
}

TEST(ResponderRegistry, OpenConnectsToTheInitiatorAndServesLatencyUntilClosed) {
  Rig rig;
  auto registry = rig.Make();
  roced::v1::OpenEndpointRequest req = OpenRequest();
  req.set_busy_poll(true);
  absl::StatusOr<roced::v1::OpenEndpointResponse> opened = registry->Open(req);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->endpoint_id().size(), 16u);
  EXPECT_EQ(opened->device(), "mlx5_0");
  ASSERT_EQ(opened->responder_qps_size(), 1);
  EXPECT_EQ(opened->responder_qps(0).qpn(), 100u);
  {
    std::lock_guard<std::mutex> lock(rig.behaviour.mu);
    EXPECT_EQ(rig.behaviour.last_spec.device, "mlx5_0");
    EXPECT_EQ(rig.behaviour.last_spec.kind, roced::v1::PROBE_KIND_LATENCY);
    EXPECT_EQ(rig.behaviour.last_spec.size, 2u);
    EXPECT_EQ(rig.behaviour.last_spec.qps, 1u);
    EXPECT_EQ(rig.behaviour.last_spec.outstanding, 1u);
    EXPECT_TRUE(rig.behaviour.last_spec.busy_poll);
    ASSERT_EQ(rig.behaviour.last_remote.size(), 1u);
    EXPECT_EQ(rig.behaviour.last_remote[0].qpn(), 9u);
    EXPECT_EQ(rig.behaviour.last_traffic_class, 106u);
  }
  EXPECT_EQ(registry->size(), 1u);
  EXPECT_TRUE(WaitFor([&] { return rig.behaviour.serving.load() == 1; }));
  EXPECT_TRUE(registry->Close(opened->endpoint_id()).ok());
  EXPECT_EQ(registry->size(), 0u);
  EXPECT_EQ(rig.behaviour.serving.load(), 0);  // joined before Close returns
  EXPECT_EQ(rig.behaviour.live.load(), 0);
}

TEST(ResponderRegistry, BandwidthEndpointsHaveOneQueuePairPerInitiatorQueuePairAndNoServer) {
  Rig rig;
  auto registry = rig.Make();
  auto opened = registry->Open(OpenRequest(60, roced::v1::PROBE_KIND_BANDWIDTH, 4));
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->responder_qps_size(), 4);
  absl::SleepFor(absl::Milliseconds(50));  // why: a server started by mistake would count within it
  EXPECT_EQ(rig.behaviour.serving.load(), 0);  // one-sided writes: nothing to answer
  EXPECT_TRUE(registry->Close(opened->endpoint_id()).ok());
  EXPECT_EQ(rig.behaviour.live.load(), 0);
}

TEST(ResponderRegistry, AnEndpointWhoseLeaseEndedIsReleasedByTheReaper) {
  Rig rig;
  auto registry = rig.Make();
  const absl::Time t0 = absl::Now();
  auto opened = registry->Open(OpenRequest(/*lease_seconds=*/5));
  ASSERT_TRUE(opened.ok());
  registry->ReapExpired(t0 + absl::Seconds(4));
  EXPECT_EQ(registry->size(), 1u);
  EXPECT_EQ(rig.behaviour.live.load(), 1);
  registry->ReapExpired(absl::Now() + absl::Seconds(5));
  EXPECT_EQ(registry->size(), 0u);
  EXPECT_EQ(rig.behaviour.live.load(), 0);
  EXPECT_EQ(rig.behaviour.serving.load(), 0);
  absl::Status closed = registry->Close(opened->endpoint_id());
  EXPECT_EQ(closed.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(closed.message(), absl::StrCat("no probe endpoint '", opened->endpoint_id(),
                                           "' (closed, or its lease expired)"));
}

// A latency endpoint whose serving failed (its initiator vanished, the
// device is being removed) is released at the next reap, not held to the
// end of its lease: its queue pairs would hold up `rdma link delete`.
TEST(ResponderRegistry, AnEndpointThatStoppedAnsweringIsReleasedAtTheNextReap) {
  Rig rig;
  {
    std::lock_guard<std::mutex> lock(rig.behaviour.mu);
    rig.behaviour.serve_error = absl::DeadlineExceededError("no completion for an RDMA WRITE in time");
  }
  auto registry = rig.Make();
  ASSERT_TRUE(registry->Open(OpenRequest(/*lease_seconds=*/180)).ok());
  ASSERT_TRUE(WaitFor([&] {
    registry->ReapExpired(absl::Now());
    return registry->size() == 0;
  }));
  EXPECT_TRUE(WaitFor([&] { return rig.behaviour.live.load() == 0; }));
}

TEST(ResponderRegistry, LeasesAreClampedAndZeroMeansTheDefault) {
  struct Case {
    uint32_t requested;
    absl::Duration kept, released;
  };
  for (const Case& c : {Case{0, absl::Seconds(29), absl::Seconds(31)},
                        Case{10000, absl::Seconds(179), absl::Seconds(181)}}) {
    Rig rig;
    auto registry = rig.Make();
    const absl::Time t0 = absl::Now();
    ASSERT_TRUE(registry->Open(OpenRequest(c.requested)).ok());
    registry->ReapExpired(t0 + c.kept);
    EXPECT_EQ(registry->size(), 1u) << c.requested;
    registry->ReapExpired(absl::Now() + c.released);
    EXPECT_EQ(registry->size(), 0u) << c.requested;
  }
  EXPECT_EQ(LeaseSeconds(0), 30u);
  EXPECT_EQ(LeaseSeconds(1), 1u);
  EXPECT_EQ(LeaseSeconds(601), 180u);
}

TEST(ResponderRegistry, OneCallerGetsItsShareAndOthersStillGetTheirs) {
  Rig rig;
  auto registry = std::make_unique<ResponderRegistry>(
      &rig.factory, [&rig]() -> absl::StatusOr<LocalPort> { return rig.local; },
      ResponderLimits{/*max_endpoints=*/32, /*max_per_caller=*/2, /*max_pinned_bytes=*/1 << 20});
  ASSERT_TRUE(registry->Open(OpenRequest(), "node1.example").ok());
  ASSERT_TRUE(registry->Open(OpenRequest(), "node1.example").ok());
  // The request's own initiator name does not matter: the caller does.
  roced::v1::OpenEndpointRequest renamed = OpenRequest();
  renamed.set_initiator("someone-else");
  auto third = registry->Open(renamed, "node1.example");
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(third.status().message(), "2 probe endpoints open for 'node1.example'; one caller may hold 2");
  EXPECT_TRUE(registry->Open(OpenRequest(), "node2.example").ok());
  EXPECT_EQ(rig.behaviour.created.load(), 3);  // refused before creating one
}

TEST(ResponderRegistry, RegistrationsStayWithinThePinnedBytesBudget) {
  Rig rig;
  auto registry = std::make_unique<ResponderRegistry>(
      &rig.factory, [&rig]() -> absl::StatusOr<LocalPort> { return rig.local; },
      ResponderLimits{/*max_endpoints=*/32, /*max_per_caller=*/32, /*max_pinned_bytes=*/3 << 20});
  roced::v1::OpenEndpointRequest big = OpenRequest(60, roced::v1::PROBE_KIND_BANDWIDTH);
  big.set_size(1 << 20);  // pins 2 MiB
  big.mutable_initiator_qps(0)->set_length(1 << 20);
  auto first = registry->Open(big, "a");
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = registry->Open(big, "b");
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(second.status().message(),
            "probe endpoints pin 2097152 bytes; 2097152 more would pass the limit of 3145728");
  ASSERT_TRUE(registry->Close(first->endpoint_id()).ok());
  EXPECT_TRUE(registry->Open(big, "b").ok());
}

TEST(ResponderRegistry, BeyondTheLimitOpensAreResourceExhaustedUntilOneCloses) {
  Rig rig;
  auto registry = rig.Make(/*max_endpoints=*/2);
  auto first = registry->Open(OpenRequest());
  auto second = registry->Open(OpenRequest());
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_NE(first->endpoint_id(), second->endpoint_id());
  absl::StatusOr<roced::v1::OpenEndpointResponse> third = registry->Open(OpenRequest());
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(third.status().message(), "2 probe endpoints open; the limit is 2");
  EXPECT_EQ(rig.behaviour.created.load(), 2);  // refused before creating one
  ASSERT_TRUE(registry->Close(first->endpoint_id()).ok());
  EXPECT_TRUE(registry->Open(OpenRequest()).ok());
}

TEST(ResponderRegistry, ManyConcurrentOpensNeverPassTheLimit) {
  Rig rig;
  auto registry = rig.Make(/*max_endpoints=*/8);
  std::vector<std::future<absl::StatusCode>> opens;
  for (int i = 0; i < 20; ++i) {
    opens.push_back(std::async(std::launch::async,
                               [&] { return registry->Open(OpenRequest()).status().code(); }));
  }
  int ok = 0;
  for (auto& f : opens) {
    const absl::StatusCode code = f.get();
    if (code == absl::StatusCode::kOk) ++ok;
    else EXPECT_EQ(code, absl::StatusCode::kResourceExhausted);
  }
  EXPECT_EQ(ok, 8);
  EXPECT_EQ(registry->size(), 8u);
  EXPECT_TRUE(WaitFor([&] { return rig.behaviour.live.load() == 8; }));
}

TEST(ResponderRegistry, CloseReleasesOnceAndUnknownIdsAreNotFound) {
  Rig rig;
  auto registry = rig.Make();
  auto opened = registry->Open(OpenRequest());
  ASSERT_TRUE(opened.ok());
  EXPECT_TRUE(registry->Close(opened->endpoint_id()).ok());
  EXPECT_EQ(registry->Close(opened->endpoint_id()).code(), absl::StatusCode::kNotFound);
  absl::Status unknown = registry->Close("feedfacecafebeef");
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.message(),
            "no probe endpoint 'feedfacecafebeef' (closed, or its lease expired)");
  EXPECT_EQ(rig.behaviour.live.load(), 0);
}

TEST(ResponderRegistry, MalformedRequestsAreInvalidAndCreateNothing) {
  Rig rig;
  auto registry = rig.Make();
  auto expect_invalid = [&](roced::v1::OpenEndpointRequest req, const std::string& message) {
    absl::StatusOr<roced::v1::OpenEndpointResponse> r = registry->Open(req);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(r.status().message(), HasSubstr(message));
  };
  auto req = OpenRequest();
  req.set_kind(roced::v1::PROBE_KIND_UNSPECIFIED);
  expect_invalid(req, "kind: latency or bandwidth required");
  req = OpenRequest();
  req.clear_initiator_qps();
  expect_invalid(req, "initiator_qps: 0 queue pairs; allowed 1-16");
  expect_invalid(OpenRequest(60, roced::v1::PROBE_KIND_BANDWIDTH, 17),
                 "initiator_qps: 17 queue pairs; allowed 1-16");
  expect_invalid(OpenRequest(60, roced::v1::PROBE_KIND_LATENCY, 2),
                 "initiator_qps: latency probes use one queue pair");
  req = OpenRequest();
  req.set_size(0);
  expect_invalid(req, "size: 0 is out of range; allowed 1-16777216");
  req = OpenRequest();
  req.set_traffic_class(256);
  expect_invalid(req, "traffic_class: out of range; allowed 0-255");
  req = OpenRequest();
  req.mutable_initiator_qps(0)->set_gid("short");
  expect_invalid(req, "initiator_qps[0]: needs qpn, a 16-byte gid, rkey and a buffer");
  req = OpenRequest();
  req.mutable_initiator_qps(0)->set_length(1);
  expect_invalid(req, "initiator_qps[0]");
  EXPECT_EQ(rig.behaviour.created.load(), 0);
}

TEST(ResponderRegistry, WithoutAnRdmaPortOpensAreFailedPrecondition) {
  Rig rig;
  auto none = rig.Make(32, /*with_factory=*/false);
  auto r = none->Open(OpenRequest());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "probes need libibverbs on the live /sys");

  auto registry = rig.Make();
  rig.local_error = ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                               "no active RoCE port with an IPv4 RoCE v2 GID");
  r = registry->Open(OpenRequest());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "no active RoCE port with an IPv4 RoCE v2 GID");
  EXPECT_EQ(rig.behaviour.created.load(), 0);
}

TEST(ResponderRegistry, EndpointFailuresMapToTheAnswersStatus) {
  Rig rig;
  auto registry = rig.Make();
  {
    std::lock_guard<std::mutex> lock(rig.behaviour.mu);
    rig.behaviour.create_error = absl::ResourceExhaustedError("ibv_create_qp: ENOMEM");
  }
  auto r = registry->Open(OpenRequest());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(), "ibv_create_qp: ENOMEM");
  {
    std::lock_guard<std::mutex> lock(rig.behaviour.mu);
    rig.behaviour.create_error =
        ProbeError(absl::StatusCode::kInternal, kReasonNoGid, "no IPv4 RoCE v2 GID on eth0");
  }
  r = registry->Open(OpenRequest());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "no IPv4 RoCE v2 GID on eth0");
  {
    std::lock_guard<std::mutex> lock(rig.behaviour.mu);
    rig.behaviour.create_error = absl::OkStatus();
    rig.behaviour.connect_error = absl::InternalError("ibv_modify_qp to RTR: EINVAL");
  }
  r = registry->Open(OpenRequest());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "ibv_modify_qp to RTR: EINVAL");
  EXPECT_EQ(rig.behaviour.live.load(), 0);  // the unconnected endpoint is gone
  EXPECT_EQ(registry->size(), 0u);
}

TEST(ResponderRegistry, ShutdownReleasesEverythingAndRefusesNewEndpoints) {
  Rig rig;
  auto registry = rig.Make();
  auto a = registry->Open(OpenRequest());
  auto b = registry->Open(OpenRequest(60, roced::v1::PROBE_KIND_BANDWIDTH, 2));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(WaitFor([&] { return rig.behaviour.serving.load() == 1; }));
  registry->Shutdown();
  EXPECT_EQ(rig.behaviour.live.load(), 0);
  EXPECT_EQ(rig.behaviour.serving.load(), 0);
  EXPECT_EQ(registry->size(), 0u);
  auto late = registry->Open(OpenRequest());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(late.status().message(), "agent is stopping");
  EXPECT_EQ(rig.behaviour.live.load(), 0);
  EXPECT_EQ(registry->Close(a->endpoint_id()).code(), absl::StatusCode::kNotFound);
  registry->ReapExpired(absl::InfiniteFuture());  // nothing left, no crash
  registry->Shutdown();                           // idempotent
}

TEST(ResponderRegistry, DestroyingTheRegistryReleasesItsEndpoints) {
  Rig rig;
  auto registry = rig.Make();
  ASSERT_TRUE(registry->Open(OpenRequest()).ok());
  EXPECT_TRUE(WaitFor([&] { return rig.behaviour.serving.load() == 1; }));
  registry.reset();
  EXPECT_EQ(rig.behaviour.live.load(), 0);
  EXPECT_EQ(rig.behaviour.serving.load(), 0);
}

}  // namespace
}  // namespace roced::probe
