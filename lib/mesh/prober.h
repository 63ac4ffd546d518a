// The fleet mesh's prober and responder logic, without I/O: the
// agent's mesh runtime moves bytes over its UD queue pairs and passes the
// clock; this decides what to send, matches replies, counts losses and
// keeps the results.
//
// - Due() turns the schedule's probes into requests for the peers whose
//   mesh endpoint is known (SetTarget, from their Describe); a peer
//   without one is skipped (not sent, so not lost: ListMeshResults shows
//   it unreachable instead). The "path MTU" size class is the smaller of
//   the two ports' active MTUs.
// - Each request carries a prober-wide id as its sequence, and the
//   prober's key (the rendezvous hash of its name): a reply that matches
//   no pending request (late, duplicated, another prober's) is dropped and
//   counted.
// - A request not answered within `timeout` is lost, counted in the
//   window of the moment it was sent.
// - Answer() is the responder: a request in, the reply's bytes out.
//
// Bounded: at most kMaxPending requests wait for an answer (beyond it
// Due() sends nothing more until some are answered or lost); results as
// lib/mesh/results bounds them. Not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "mesh/pinglist.h"
#include "mesh/results.h"
#include "mesh/schedule.h"

namespace roced::mesh {

inline constexpr size_t kMaxPending = 65536;

// Where a peer's mesh responder listens (from its Describe).
struct MeshTarget {
  std::array<uint8_t, 16> gid{};
  uint32_t qpn = 0;
  uint32_t active_mtu = 0;  // bytes
};

struct MeshProberOptions {
  MeshScheduleOptions schedule;
  ResultWindowOptions results;
  absl::Duration timeout = absl::Seconds(1);  // a request unanswered this long is lost
  // The UDP source port a probe with flow label index i leaves from, for
  // the lost probes' traceroute lead (the runtime knows its driver); the
  // index itself when unset.
  std::function<uint32_t(uint32_t)> source_port;
};
inline constexpr absl::Duration kMinMeshTimeout = absl::Milliseconds(10);
inline constexpr absl::Duration kMaxMeshTimeout = absl::Seconds(30);

struct MeshRequest {
  std::string peer;
  MeshTarget target;
  uint32_t flow_label = 0;  // index, 0 to flow_labels - 1
  uint8_t dscp = 0;
  uint64_t id = 0;          // what Sent() and SendFailed() take
  std::vector<uint8_t> bytes;
};

// The responder's reply: sent back with the request's DSCP and flow label.
struct MeshAnswer {
  std::vector<uint8_t> bytes;
  uint8_t dscp = 0;
  uint32_t flow_label = 0;  // index
};

// One probe's fate, for the runtime's metrics.
struct MeshOutcome {
  std::string peer;
  uint32_t size_bytes = 0;
  uint32_t dscp = 0;
  bool answered = false;
  int64_t rtt_ns = 0;
};

class MeshProber {
 public:
  // INVALID_ARGUMENT naming the field and its range.
  static absl::StatusOr<MeshProber> Create(std::string self, MeshProberOptions options);

  // The peers to probe; the results of peers that left are forgotten.
  void SetPinglist(const Pinglist& pinglist, int64_t now_ns);
  // A peer's endpoint, or nullopt when it is not known (any more).
  void SetTarget(const std::string& peer, std::optional<MeshTarget> target);
  void SetSlowdown(double factor) { schedule_.SetSlowdown(factor); }

  // The requests due at now_ns (at most `max`), with the local port's
  // active MTU for the path-MTU size class. Each is pending from now_ns
  // (its t1) until answered or lost.
  std::vector<MeshRequest> Due(int64_t now_ns, size_t max, uint32_t local_mtu);
  // A request's send completion: its t1 becomes `stamp_ns` (a NIC stamp
  // replaces the host's, so t1 and t4 come from one clock).
  void Sent(uint64_t id, int64_t stamp_ns, bool nic_clock);
  // A request that could not be posted: forgotten, neither sent nor lost.
  void SendFailed(uint64_t id);

  // A reply received at t4. The outcome when it answers a pending request;
  // nullopt (counted in unmatched()) otherwise.
  std::optional<MeshOutcome> OnReply(std::span<const uint8_t> bytes, int64_t t4_ns, bool nic_clock);
  // The requests pending longer than the timeout, as lost outcomes.
  std::vector<MeshOutcome> ExpireLost(int64_t now_ns);

  // The responder: the reply to a request received at t2 and answered at
  // t3, or the error (not a probe, or a reply) when it is none.
  static absl::StatusOr<MeshAnswer> Answer(std::span<const uint8_t> bytes, int64_t t2_ns,
                                                     int64_t t3_ns, bool nic_clock);

  std::vector<SeriesWindow> Snapshot(int64_t now_ns) const { return results_.Snapshot(now_ns); }
  WindowTotals Totals(int64_t now_ns, int64_t since_ns) const { return results_.Totals(now_ns, since_ns); }
  size_t ExpireResults(int64_t now_ns) { return results_.Expire(now_ns); }
  // When the next request is due or the next pending one times out.
  int64_t NextWake() const;

  // The peers whose last `at_least` probes were all lost: an agent that
  // restarted, or whose device came back, answers on a new QPN, so the
  // runtime asks its Describe again instead of waiting out the cache.
  std::vector<std::string> PeersLosingAll(uint32_t at_least) const;

  const MeshSchedule& schedule() const { return schedule_; }
  size_t pending() const { return pending_.size(); }
  uint64_t unmatched() const { return unmatched_; }
  uint64_t prober_key() const { return key_; }
  // The peer's ToR per the pinglist ("" for a peer not on it).
  std::string TorOf(const std::string& peer) const;
  bool HasTarget(const std::string& peer) const { return targets_.contains(peer); }

 private:
  struct Pending {
    std::string peer;
    uint32_t size_bytes = 0;
    uint32_t dscp = 0;
    uint32_t flow_label = 0;
    int64_t sent_ns = 0;   // the schedule's clock: the window it counts in
    int64_t t1_ns = 0;     // the stamp the round trip starts from
    bool nic_clock = false;
  };
  MeshProber(std::string self, MeshProberOptions options, MeshSchedule schedule, ResultWindows results);
  void Record(const Pending& p, bool answered, int64_t rtt_ns, int64_t hold_ns);

  std::string self_;
  MeshProberOptions options_;
  MeshSchedule schedule_;
  ResultWindows results_;
  uint64_t key_ = 0;
  uint64_t next_id_ = 1;
  absl::flat_hash_map<std::string, MeshTarget> targets_;
  absl::flat_hash_map<std::string, std::string> tors_;
  std::map<uint64_t, Pending> pending_;  // by id: ids rise with time, so the oldest first
  uint64_t unmatched_ = 0;
  absl::flat_hash_map<std::string, uint32_t> lost_in_row_;
};

}  // namespace roced::mesh
