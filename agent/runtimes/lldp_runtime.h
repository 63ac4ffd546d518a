// The agent's LLDP listener: what the switch at the other end of every
// RoCE netdev advertises (identity, maximum frame size, IEEE 802.1Qaz or
// CEE PFC, ETS and application priorities), for GetState, rocectl status,
// /metrics and diagnose's switch_alignment check. roced never sends LLDP.
//
// Threads: Start() runs one thread (roced-lldp) that sleeps in poll() on an
// AF_PACKET socket per RoCE netdev and an eventfd (Stop, Resync). It wakes
// for frames, for the next neighbour's TTL running out, and to follow the
// RoCE netdevs of the agent's state (sockets opened for new ones, closed for
// gone ones): when the state changes (a listener calls Resync) and every
// kResyncInterval besides. Every public method is
// thread-safe.
//
// Bounds: at most kFramesPerRound frames are read per socket per round and
// rounds are at least kMinRoundGap apart, so a flood of LLDP frames costs
// at most ~80 decodes a second per netdev (the kernel drops the rest of it
// in the socket's 64 KiB buffer); at most kMaxNeighborsPerNetdev neighbours
// are kept per netdev (the one heard longest ago makes room).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hal/dcb_netlink.h"
#include "hal/lldp_socket.h"
#include "prometheus/collectable.h"
#include "roced/v1/state.pb.h"
#include "util/clock.h"

namespace roced::agent {

class Agent;

inline constexpr size_t kMaxNeighborsPerNetdev = 4;
inline constexpr size_t kFramesPerRound = 8;
inline constexpr absl::Duration kMinRoundGap = absl::Milliseconds(100);
inline constexpr absl::Duration kResyncInterval = absl::Seconds(60);

// The neighbours heard, by netdev: pure bookkeeping on an injected clock.
// Thread-safe.
class LldpTable {
 public:
  // `neighbor` was decoded from a frame heard on `netdev` at `now`. A TTL of
  // 0 is the neighbour's shutdown LLDPDU: it is removed. True when the
  // neighbour is new (not heard within its TTL before).
  bool Heard(const std::string& netdev, roced::v1::LldpNeighbor neighbor, absl::Time now);
  // Drops the neighbours of netdevs not in `netdevs`.
  void Retain(const std::set<std::string>& netdevs);
  // The neighbours whose TTL has not run out at `now` (the others are
  // dropped), by netdev, chassis and port.
  std::vector<roced::v1::LldpNeighbor> Current(absl::Time now);
  // When the next neighbour's TTL runs out (InfiniteFuture: none).
  absl::Time NextExpiry() const;

 private:
  struct Key {
    std::string netdev, chassis, port;
    auto operator<=>(const Key&) const = default;
  };
  struct Entry {
    roced::v1::LldpNeighbor neighbor;
    absl::Time heard;
    absl::Time expires;
  };
  void MakeRoom(const std::string& netdev);

  mutable std::mutex mu_;
  std::map<Key, Entry> entries_;
};

// What the driver learned from its link partner (DCB_ATTR_IEEE_PEER_*), as
// a neighbour of `netdev` whose values are marked DCB_SOURCE_DCB_PEER;
// nullopt when the reading has none. Drivers whose firmware runs DCBX
// report the switch's settings there, and the host may never see the
// LLDP frames themselves.
std::optional<roced::v1::LldpNeighbor> DriverPeerView(const std::string& netdev, const hal::DcbReading& reading);

// Fills what LLDP did not give `heard` (PFC, ETS, the app table) from the
// driver's view.
void MergeDriverPeer(const roced::v1::LldpNeighbor& driver, roced::v1::LldpNeighbor* heard);

struct LldpRuntimeOptions {
  // Opens the LLDP socket of a netdev (tests open theirs inside their own
  // network namespace).
  std::function<absl::StatusOr<std::unique_ptr<hal::LldpSocket>>(const std::string&)> open =
      hal::LldpSocket::Open;
  // The clock of the neighbours' TTLs and the socket resync. The loop
  // waits on its sockets in real time. Null: util::RealClock(). Not owned.
  util::Clock* clock = nullptr;
  // Reads a netdev's DCB state, for the driver's peer attributes (the live
  // kernel's DcbNetlink::Get). Null: not read.
  std::function<absl::StatusOr<hal::DcbReading>(const std::string&)> dcb_read;
};

class LldpRuntime {
 public:
  // `agent` must outlive this object.
  explicit LldpRuntime(Agent* agent, LldpRuntimeOptions options = {});
  ~LldpRuntime();
  LldpRuntime(const LldpRuntime&) = delete;
  LldpRuntime& operator=(const LldpRuntime&) = delete;

  void Start();
  // Stops the thread and closes the sockets. Idempotent.
  void Stop();
  // Re-reads the RoCE netdevs now (a discovery change). Called by the
  // agent's state listener, so it only signals the thread.
  void Resync();

  std::vector<roced::v1::LldpNeighbor> Neighbors();
  // The LLDP families of /metrics.
  std::vector<std::shared_ptr<prometheus::Collectable>> Collectables();

 private:
  void Run();
  void SyncSockets();
  void ReadFrames(hal::LldpSocket* socket);
  absl::Duration NextWait();
  void ReportHealth(const std::map<std::string, std::string>& failures);
  void RefreshDriverPeers(const std::set<std::string>& netdevs);

  Agent* const agent_;
  uint64_t state_listener_ = 0;  // Agent::AddStateListener's id while started
  const LldpRuntimeOptions options_;
  util::Clock* const clock_;
  LldpTable table_;
  std::shared_ptr<prometheus::Collectable> collector_;
  // The loop thread's own: sockets by netdev, and when it last synced.
  std::map<std::string, std::unique_ptr<hal::LldpSocket>> sockets_;
  // Netdevs whose socket could not be opened, with why (retried each sync).
  std::map<std::string, std::string> failures_;
  absl::Time synced_ = absl::InfinitePast();
  int wake_fd_ = -1;
  std::mutex mu_;
  bool stop_ = false;
  bool resync_ = false;
  std::thread thread_;
  // The driver's peer views by netdev, refreshed every sync.
  std::mutex peers_mu_;
  std::map<std::string, roced::v1::LldpNeighbor> peers_;
};

}  // namespace roced::agent
