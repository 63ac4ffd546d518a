// The libibverbs probe engine: RC queue pairs over a RoCE v2 GID, one
// registered buffer per endpoint, RDMA WRITE latency ping-pong and
// streaming bandwidth (see endpoint.h for the contract).
//
// Device contexts and protection domains are opened on first use and kept
// (one per device, shared by every endpoint on it); a context whose device
// was removed (IBV_EVENT_DEVICE_FATAL, or a port query failing) is dropped
// and the device opened again on the next endpoint, so probing resumes
// when the device returns. The GID is looked up anew for every endpoint,
// which is what re-resolving on IBV_EVENT_GID_CHANGE amounts to here.
//
// Thread-safe: Create may be called from any thread.
#pragma once

#include <infiniband/verbs.h>

#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "probe/endpoint.h"

namespace roced::probe {

// Bytes -> ibv_mtu (256..4096, rounding down); IBV_MTU_256 below 512.
ibv_mtu BytesToIbMtu(uint32_t bytes);

// The path MTU for a connection: the smaller of both active MTUs (bytes);
// a remote MTU of 0 (unknown) leaves the local one.
uint32_t PathMtuBytes(uint32_t local_active_mtu, uint32_t remote_active_mtu);

class DeviceHandle;

class VerbsEndpointFactory final : public EndpointFactory {
 public:
  VerbsEndpointFactory();
  ~VerbsEndpointFactory() override;

  absl::StatusOr<std::unique_ptr<Endpoint>> Create(const EndpointSpec& spec) override
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The open handle of `device`, (re)opened as needed.
  absl::StatusOr<std::shared_ptr<DeviceHandle>> Acquire(const std::string& device)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<DeviceHandle>> devices_ ABSL_GUARDED_BY(mu_);
};

}  // namespace roced::probe
