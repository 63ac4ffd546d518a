// Owns the libibverbs contexts of the RDMA devices the agent manages: each
// device is opened once, kept open, closed when it disappears and re-opened
// when it comes back. Live attributes only verbs knows (the port's active
// MTU, its logical state) are read from the open contexts.
//
// Thread-safe: all public methods may be called from any thread.
#pragma once

#include <infiniband/verbs.h>

#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include <mutex>

#include "absl/base/thread_annotations.h"
#include "roced/v1/state.pb.h"

namespace roced::hal {

class VerbsDevices {
 public:
  VerbsDevices() = default;
  ~VerbsDevices();
  VerbsDevices(const VerbsDevices&) = delete;
  VerbsDevices& operator=(const VerbsDevices&) = delete;

  // Re-lists devices through libibverbs: opens new ones, closes vanished
  // ones. Returns the names that were opened or closed by this call.
  struct Change {
    std::vector<std::string> opened;
    std::vector<std::string> closed;
    std::vector<std::string> failed;  // listed but ibv_open_device failed
  };
  Change Refresh();

  // For every device in `devices` that has an open context: sets verbs_open
  // and overwrites each port's state and active_mtu with what
  // ibv_query_port reports (the authoritative values on a live system).
  void Enrich(std::vector<roced::v1::RdmaDevice>* devices) const;

  std::vector<std::string> OpenDeviceNames() const;

  // The populated GID entries of one port of an open device, through one
  // ibv_query_gid_table call (what the port's gids/ and gid_attrs/ files
  // say, without reading every slot: rxe has 1024, mlx5 255 a port).
  // nullopt when the device is not open or the query fails: the caller
  // reads sysfs instead.
  std::optional<std::vector<roced::v1::Gid>> PortGids(const std::string& device, uint32_t port) const;

  // Closes every context (at shutdown).
  void CloseAll();

 private:
  struct Open {
    ibv_context* context = nullptr;
    uint8_t port_count = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Open> open_ ABSL_GUARDED_BY(mu_);
};

// IB MTU enum -> bytes (IBV_MTU_1024 -> 1024); 0 for unknown values.
uint32_t IbMtuToBytes(int mtu);

}  // namespace roced::hal
