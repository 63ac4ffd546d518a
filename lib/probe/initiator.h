// The initiating side of one probe, start to end: creates the local
// endpoint, asks the peer agent for one of its own (PeerClient::
// OpenEndpoint), connects the queue pairs, runs the latency or bandwidth
// pattern, takes both ends' counter deltas, and closes the peer's endpoint
// whatever happened (its lease is the backstop when that fails too).
//
// A probe never fails as a call: every failure becomes a ProbeResult with
// success false and a reason (peer_unavailable, peer_busy, connect_timeout,
// wc_error:<status>, device_unavailable, cancelled, ...), and every step has
// a bound (the options), so a probe never hangs.
//
// Ownership: the initiator does not own its factory, peer client or local
// port function; they must outlive it. Results are the caller's to record
// (history, metrics).
//
// Threads: Run may be called from any number of threads at once (the
// factory and the peer client must be thread-safe); it blocks its caller
// for the probe's duration. `cancel` may be set from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model/defaults.h"
#include "probe/counter_delta.h"
#include "probe/endpoint.h"
#include "probe/params.h"
#include "probe/peer_client.h"
#include "roced/v1/agent.pb.h"

namespace roced::probe {

struct InitiatorOptions {
  // Sent to peers as OpenEndpointRequest.initiator.
  std::string name;
  // Bound on the OpenEndpoint call to the peer (connect included): a peer
  // agent that is down fails the probe with peer_unavailable within it.
  absl::Duration open_timeout = absl::Seconds(5);
  // Bound on CloseEndpoint, and on each of the peer's GetCounters.
  absl::Duration close_timeout = absl::Seconds(2);
  // The longest one latency round trip may take.
  absl::Duration round_trip_timeout = absl::Seconds(2);
  // A latency run fails with "timeout" past this.
  absl::Duration max_latency_run = absl::Seconds(120);
  // Bandwidth: how long outstanding writes may take to drain.
  absl::Duration completion_timeout = absl::Seconds(5);
  // Where the local port's counters are read (hal's counter reader).
  std::string sysfs_root = model::defaults::kSysfsRoot;
};

// What one probe produced.
struct InitiatorRun {
  roced::v1::ProbeResult result;
  // A successful latency run's round trips in nanoseconds, in order (for
  // the caller's latency histogram); empty otherwise.
  std::vector<int64_t> rtt_ns;
};

class Initiator {
 public:
  // `factory` null: every probe fails with device_unavailable. `local_port`
  // is asked when each probe starts.
  Initiator(InitiatorOptions options, EndpointFactory* factory, PeerClient* peers,
            LocalPortFn local_port);

  // Runs `params` to the end; stops early with "cancelled" once `*cancel`
  // (may be null) turns true.
  InitiatorRun Run(const ProbeParams& params, const std::atomic<bool>* cancel) const;

  const InitiatorOptions& options() const { return options_; }

 private:
  struct Session;
  absl::Status Drive(const ProbeParams& params, const std::atomic<bool>* cancel,
                     Session* session, InitiatorRun* run) const;
  absl::Status CreateLocal(const ProbeParams& params, Session* session,
                           roced::v1::ProbeResult* result) const;
  absl::Status OpenPeer(const ProbeParams& params, Session* session) const;
  absl::Status RunTraffic(const ProbeParams& params, const std::atomic<bool>* cancel,
                          Session* session, InitiatorRun* run) const;
  absl::StatusOr<CounterSnapshot> PeerCounters(const Session& session) const;
  void ClosePeer(const Session& session) const;

  const InitiatorOptions options_;
  EndpointFactory* const factory_;
  PeerClient* const peers_;
  const LocalPortFn local_port_;
};

}  // namespace roced::probe
