// Stand-ins for the probe engine's dependencies where no RDMA device or peer
// agent exists: endpoints that answer at once (or block until told, or fail
// as told) and a peer client that answers from fields. The verbs engine and
// gRPC run in the lab (tests/lab/tests/probe_*.sh) and in
// probe_runtime_test.
//
// Thread-safe where the engine needs it: the fields a test sets while
// probes run are atomics or guarded by `mu`.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "probe/endpoint.h"
#include "probe/peer_client.h"
#include "probe/reason.h"
#include "util/status_macros.h"

namespace roced::probe {

// What the fake endpoints of one node do; shared by all of them.
struct FakeEndpointBehaviour {
  std::atomic<int> live{0};
  std::atomic<int> created{0};
  std::atomic<int> serving{0};
  std::atomic<int> running{0};
  std::atomic<bool> block{false};  // runs wait until cleared (or cancelled)
  std::mutex mu;
  absl::Status run_error;      // what runs return (after `block`)
  absl::Status create_error;   // Create fails with it
  absl::Status connect_error;  // Connect fails with it
  absl::Status serve_error;    // ServeLatency returns it at once
  std::vector<roced::v1::QpEndpoint> last_remote;
  uint32_t last_traffic_class = 0;
  // The specs and run options the engine asked for, last ones.
  EndpointSpec last_spec;
  bool last_busy_poll = false;
  uint64_t last_messages = 0;
  LatencyOptions last_latency;
  BandwidthOptions last_bandwidth;
  // Device the endpoints report instead of the spec's (a responder whose
  // device has no counters).
  std::string device_override;
  // Called in every run before it returns (e.g. to move a counter).
  std::function<void()> on_run;
};

class FakeEndpointForTest final : public Endpoint {
 public:
  FakeEndpointForTest(FakeEndpointBehaviour* b, const EndpointSpec& spec)
      : b_(b), device_(spec.device) {
    ++b_->live;
    ++b_->created;
    {
      std::lock_guard<std::mutex> lock(b_->mu);
      b_->last_spec = spec;
      b_->last_busy_poll = spec.busy_poll;
      if (!b_->device_override.empty()) device_ = b_->device_override;
    }
    for (uint32_t i = 0; i < spec.qps; ++i) {
      roced::v1::QpEndpoint qp;
      qp.set_qpn(100 + i);
      qp.set_psn(7);
      qp.set_gid(std::string(16, '\x01'));
      qp.set_rkey(42);
      qp.set_addr(4096);
      qp.set_length(spec.size);
      qp.set_active_mtu(1024);
      local_.push_back(qp);
    }
  }
  ~FakeEndpointForTest() override { --b_->live; }

  const std::vector<roced::v1::QpEndpoint>& local() const override { return local_; }
  const std::string& device() const override { return device_; }
  absl::Status Connect(const std::vector<roced::v1::QpEndpoint>& remote,
                       uint32_t traffic_class) override {
    std::lock_guard<std::mutex> lock(b_->mu);
    b_->last_remote = remote;
    b_->last_traffic_class = traffic_class;
    return b_->connect_error;
  }
  absl::StatusOr<LatencyRun> RunLatency(const LatencyOptions& options,
                                        const std::atomic<bool>* cancel) override {
    {
      std::lock_guard<std::mutex> lock(b_->mu);
      b_->last_latency = options;
    }
    RETURN_IF_ERROR(Wait(cancel));
    LatencyRun run;
    // Round trips of 10, 20, ... 100 us: one-way 5..50 us.
    for (uint32_t i = 0; i < options.iterations; ++i) run.rtt_ns.push_back(10000 * (1 + i % 10));
    return run;
  }
  absl::Status ServeLatency(const std::atomic<bool>* stop, absl::Duration /*idle*/) override {
    {
      std::lock_guard<std::mutex> lock(b_->mu);
      if (!b_->serve_error.ok()) return b_->serve_error;
    }
    ++b_->serving;
    while (!stop->load()) absl::SleepFor(absl::Milliseconds(5));  // why: a server serving until stopped
    --b_->serving;
    return absl::OkStatus();
  }
  absl::StatusOr<BandwidthRun> RunBandwidth(const BandwidthOptions& options,
                                            const std::atomic<bool>* cancel) override {
    {
      std::lock_guard<std::mutex> lock(b_->mu);
      b_->last_bandwidth = options;
      b_->last_messages = options.messages;
    }
    RETURN_IF_ERROR(Wait(cancel));
    BandwidthRun run;
    run.bytes = 1250000000;  // 10 Gb/s over 1 s
    run.messages = 19073;
    run.elapsed = absl::Seconds(1);
    return run;
  }

 private:
  absl::Status Wait(const std::atomic<bool>* cancel) {
    ++b_->running;
    while (b_->block.load()) {
      if (cancel != nullptr && cancel->load()) {
        --b_->running;
        return ProbeError(absl::StatusCode::kCancelled, kReasonCancelled, "cancelled");
      }
      absl::SleepFor(absl::Milliseconds(5));  // why: a run that takes time, checking for cancel
    }
    --b_->running;
    std::function<void()> on_run;
    absl::Status error;
    {
      std::lock_guard<std::mutex> lock(b_->mu);
      on_run = b_->on_run;
      error = b_->run_error;
    }
    if (on_run) on_run();
    return error;
  }

  FakeEndpointBehaviour* b_;
  std::string device_;
  std::vector<roced::v1::QpEndpoint> local_;
};

class FakeEndpointFactoryForTest final : public EndpointFactory {
 public:
  explicit FakeEndpointFactoryForTest(FakeEndpointBehaviour* b) : b_(b) {}
  absl::StatusOr<std::unique_ptr<Endpoint>> Create(const EndpointSpec& spec) override {
    {
      std::lock_guard<std::mutex> lock(b_->mu);
      if (!b_->create_error.ok()) return b_->create_error;
    }
    return std::make_unique<FakeEndpointForTest>(b_, spec);
  }

 private:
  FakeEndpointBehaviour* b_;
};

// A peer agent that answers from these fields and records every call.
class FakePeerClientForTest final : public PeerClient {
 public:
  std::mutex mu;
  // OpenEndpoint fails with this when it is not OK; else answers
  // `open_response`, with one responder QP (QPN 200 + i) per initiator QP
  // when it names none.
  absl::Status open_error;
  roced::v1::OpenEndpointResponse open_response;
  absl::Status close_error;
  // GetCounters answers, in call order; past the end, UNAVAILABLE.
  std::vector<absl::StatusOr<roced::v1::GetCountersResponse>> counters;
  // Called at each CloseEndpoint (e.g. to see what is still alive then).
  std::function<void()> on_close;

  std::vector<std::string> open_addresses;
  std::vector<roced::v1::OpenEndpointRequest> opens;
  std::vector<absl::Time> open_deadlines;
  std::vector<roced::v1::CloseEndpointRequest> closes;
  std::vector<absl::Time> close_deadlines;
  std::vector<roced::v1::GetCountersRequest> counter_requests;

  FakePeerClientForTest() {
    open_response.set_endpoint_id("peer-endpoint-1");
    open_response.set_device("mlx5_1");
  }

  absl::StatusOr<roced::v1::OpenEndpointResponse> OpenEndpoint(
      const std::string& address, const roced::v1::OpenEndpointRequest& request,
      absl::Time deadline) override {
    std::lock_guard<std::mutex> lock(mu);
    open_addresses.push_back(address);
    opens.push_back(request);
    open_deadlines.push_back(deadline);
    if (!open_error.ok()) return open_error;
    roced::v1::OpenEndpointResponse response = open_response;
    if (response.responder_qps().empty()) {
      for (int i = 0; i < request.initiator_qps_size(); ++i) {
        roced::v1::QpEndpoint* qp = response.add_responder_qps();
        qp->set_qpn(200 + i);
        qp->set_gid(std::string(16, '\x02'));
        qp->set_rkey(43);
        qp->set_length(request.size());
      }
    }
    return response;
  }

  absl::StatusOr<roced::v1::CloseEndpointResponse> CloseEndpoint(
      const std::string&, const roced::v1::CloseEndpointRequest& request,
      absl::Time deadline) override {
    std::function<void()> hook;
    absl::Status error;
    {
      std::lock_guard<std::mutex> lock(mu);
      closes.push_back(request);
      close_deadlines.push_back(deadline);
      hook = on_close;
      error = close_error;
    }
    if (hook) hook();
    if (!error.ok()) return error;
    return roced::v1::CloseEndpointResponse();
  }

  absl::StatusOr<roced::v1::GetCountersResponse> GetCounters(
      const std::string&, const roced::v1::GetCountersRequest& request, absl::Time) override {
    std::lock_guard<std::mutex> lock(mu);
    counter_requests.push_back(request);
    if (counter_requests.size() > counters.size()) {
      return absl::UnavailableError("no answer configured");
    }
    return counters[counter_requests.size() - 1];
  }
};

}  // namespace roced::probe
