// The libibverbs probe engine: RC queue pairs over a RoCE v2 GID, one
// registered buffer per endpoint, RDMA WRITE latency ping-pong and
// streaming bandwidth (see endpoint.h for the contract).
//
// A device context and protection domain are shared by the endpoints that
// exist on a device at the same time and closed with the last of them: no
// context is held between probes. That matters for removal: a driver
// without context disassociation (rxe) makes `rdma link delete` wait until
// every user context is closed, so a context kept open would hold the
// removal up for good (an open responder endpoint holds it until it is
// closed or its lease ends). A removed device fails probes with
// device_unavailable; probing resumes when it returns. The GID is looked up
// anew for every endpoint, which is what re-resolving on
// IBV_EVENT_GID_CHANGE amounts to here.
//
// Thread-safe: Create may be called from any thread.
#pragma once

#include <infiniband/verbs.h>

#include <map>
#include <memory>
#include <string>

#include <mutex>

#include "absl/base/thread_annotations.h"
#include "probe/endpoint.h"

namespace roced::probe {

// Bytes -> ibv_mtu (256..4096, rounding down); IBV_MTU_256 below 512.
ibv_mtu BytesToIbMtu(uint32_t bytes);

// The path MTU for a connection: the smaller of both active MTUs (bytes);
// a remote MTU of 0 (unknown) leaves the local one.
uint32_t PathMtuBytes(uint32_t local_active_mtu, uint32_t remote_active_mtu);

// Probe buffers the kernel would not bind to their NIC's NUMA node (mbind
// failed: a seccomp filter, a node without memory) since the process
// started, with the last node and error; diagnose's numa_locality reports
// them. Thread-safe.
struct BufferBindFailures {
  uint64_t count = 0;
  int32_t node = -1;
  std::string error;
};
BufferBindFailures BufferBindFailuresSoFar();
// Counts one (verbs_endpoint.cc calls it; tests too).
void RecordBufferBindFailure(int32_t node, const std::string& error);

class DeviceHandle;

class VerbsEndpointFactory final : public EndpointFactory {
 public:
  VerbsEndpointFactory();
  ~VerbsEndpointFactory() override;

  absl::StatusOr<std::unique_ptr<Endpoint>> Create(const EndpointSpec& spec) override
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The open handle of `device`: the one live endpoints share, else a new
  // one. device_unavailable when the device is not (or no longer) listed.
  absl::StatusOr<std::shared_ptr<DeviceHandle>> Acquire(const std::string& device)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::mutex mu_;
  std::map<std::string, std::weak_ptr<DeviceHandle>> devices_ ABSL_GUARDED_BY(mu_);
};

}  // namespace roced::probe
