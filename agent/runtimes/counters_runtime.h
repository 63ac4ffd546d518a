// The agent's counters: the sysfs counter files, the ethtool reader, the
// Prometheus counter collector, the PFC storm watchdog and GetCounters with
// per-second rates. Owned by the Server, which registers Collectables()
// with its metrics endpoint and answers GetCounters through it.
//
// ethtool statistics and the watchdog are used only when the agent runs on
// the live /sys (or a test supplies a reader): on a fixture tree the netdev
// names mean nothing to the running kernel (the same rule as for libibverbs).
//
// Threads: Start() runs the watchdog's poller and a refresh thread that,
// whenever the agent's state changes and every 10 s otherwise (options),
// takes the RoCE ports and their netdevs from the agent's state and the
// watchdog's times from the accepted config, gives the watchdog each RoCE
// netdev's PFC-enabled priorities (DCB netlink), reads each RoCE netdev's
// carrier_changes (link flaps), and every 30 s keeps a sample of the
// congestion counters (pauses vs ECN) for the diagnosis. The state changes
// with every device, port state, config and DCB change the agent sees (its
// netlink monitor hears DCB and link events), so the periodic pass is for
// what changes unannounced: a PFC setting the NIC's firmware changed, a
// carrier that flapped back between two discovery passes. Storm changes are
// logged and published on WatchState. Every public method is thread-safe.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/core/agent.h"
#include "hal/counter_files.h"
#include "hal/ethtool_stats.h"
#include "hal/dcb_netlink.h"
#include "metrics/counter_collector.h"
#include "metrics/congestion_window.h"
#include "metrics/dcb_collector.h"
#include "metrics/link_flaps.h"
#include "metrics/pfc_watchdog.h"
#include "prometheus/collectable.h"
#include "roced/v1/agent.pb.h"
#include "util/clock.h"
#include "util/triggered_loop.h"

namespace roced::agent {

struct CountersRuntimeOptions {
  // Where the counter files are (the agent's roots).
  hal::Paths paths;
  // Netdev statistics (ethtool on the live kernel, a fake in tests): with
  // them, netdev counters are read and the PFC watchdog runs. Null: neither.
  // Not owned.
  hal::NetdevStatsReader* netdev_stats = nullptr;
  // DCB PFC counters for /metrics (the live kernel). Null: none. Not owned.
  const hal::DcbNetlink* dcb = nullptr;
  // The periodic pass, for what changes without the state changing: a PFC
  // setting the NIC's firmware changed, a carrier that flapped back between
  // two discovery passes (on a fixture tree, every carrier change).
  absl::Duration refresh_interval = absl::Seconds(10);
  // The carrier-change history to keep (shared with the reconciler, which
  // notes roced's own link toggles in it). Null: one of its own. Not owned.
  metrics::LinkFlapHistory* link_flaps = nullptr;
  // The clock of the refresh loop, the PFC watchdog, rates and windows.
  // Null: util::RealClock(). Not owned.
  util::Clock* clock = nullptr;
};

class CountersRuntime {
 public:
  // `agent` must outlive this object. Raises the process's open-file soft
  // limit to its hard limit (at most 65536) first: counter files stay open,
  // one descriptor each, and systemd's default soft limit of 1024 is low for
  // a node with many RDMA ports (nothing in roced uses select()).
  explicit CountersRuntime(Agent* agent, CountersRuntimeOptions options = {});
  ~CountersRuntime();
  CountersRuntime(const CountersRuntime&) = delete;
  CountersRuntime& operator=(const CountersRuntime&) = delete;

  // Reads the agent state once, then starts the threads.
  void Start();
  // Stops the threads. Idempotent.
  void Stop();

  // The counter collector and the watchdog, for the metrics endpoint.
  std::vector<std::shared_ptr<prometheus::Collectable>> Collectables() const;

  // Counter sets (filtered by device and netdev when given) with rates
  // since the previous call. NOT_FOUND when a filter names no device or
  // netdev the agent has.
  absl::StatusOr<roced::v1::GetCountersResponse> GetCounters(
      const roced::v1::GetCountersRequest& request);

  metrics::PfcWatchdog* watchdog() { return watchdog_.get(); }

  // For the diagnosis: the congestion counters now against the newest kept
  // sample at least a minute old (pause_without_ecn), and the RoCE
  // netdevs' carrier changes (link_flaps), read now: the flaps since the
  // refresh's last reading count.
  metrics::CongestionWindow CongestionWindowNow();
  std::vector<metrics::LinkFlaps> LinkFlaps();
  // Counter files held open (tests).
  size_t OpenCounterFiles() const { return files_->open_files(); }

 private:
  void Refresh();
  // One reading of the counters, as GetCounters' sets (without rates).
  std::vector<roced::v1::CounterSet> ReadSets(const std::vector<metrics::PortNetdev>& ports);
  // What the PFC watchdog polls: each RoCE netdev on its PFC-enabled
  // priorities (refresh thread only).
  std::vector<metrics::WatchedNetdev> WatchedNetdevs(const std::vector<metrics::PortNetdev>& ports);
  // Reads each netdev's carrier_changes into flaps_; from the refresh thread
  // and from LinkFlaps(), one at a time (samples_mu_: a reading must not
  // overtake a newer one).
  void SampleLinks(const std::vector<metrics::PortNetdev>& ports);
  void SampleCongestionIfDue(const std::vector<metrics::PortNetdev>& ports);
  void OnStormChange(const metrics::PfcStormTransition& change);
  std::vector<metrics::PortNetdev> Ports() const;

  Agent* const agent_;
  const hal::Paths paths_;
  util::Clock* const clock_;
  std::unique_ptr<hal::CounterFiles> files_;
  // The options' reader, else ethtool on the live /sys, else null.
  hal::NetdevStatsReader* netdev_stats_ = nullptr;
  std::unique_ptr<metrics::EthtoolPauseCounterSource> pause_source_;
  std::shared_ptr<metrics::CounterCollector> collector_;
  std::shared_ptr<metrics::PfcWatchdog> watchdog_;
  // DCB PFC state and request/indication counts, on the live /sys only.
  const hal::DcbNetlink* dcb_ = nullptr;
  std::shared_ptr<metrics::DcbCollector> dcb_collector_;
  // Netdevs without readable PFC state: whether their driver counts
  // per-priority pause frames (refresh thread only).
  std::map<std::string, bool> counts_pauses_;
  const absl::Duration refresh_interval_;
  uint64_t state_listener_ = 0;  // Agent::AddStateListener's id while started
  // Thread-safe themselves; written by the refresh thread.
  metrics::CongestionSamples congestion_;
  metrics::LinkFlapHistory own_flaps_;
  metrics::LinkFlapHistory& flaps_;

  // std::mutex, not absl::Mutex: Debian's Abseil is not built with TSan,
  // so absl::Mutex's ordering is invisible to it (false races in TSan runs).
  // mu_ guards ports_ and started_; rates_mu_ guards previous_.
  mutable std::mutex mu_;
  std::mutex samples_mu_;
  std::vector<metrics::PortNetdev> ports_;
  bool started_ = false;
  // Re-reads the port list when the state changes, and every refresh_interval_.
  util::TriggeredLoop refresh_{{"roced-counters", "periodic", false, clock_}, [this] { return refresh_interval_; },
                               [this](const std::string&) { Refresh(); }};

  struct Sample {
    uint64_t value = 0;
    absl::Time at;
  };
  std::mutex rates_mu_;
  std::map<std::string, Sample> previous_;
};

}  // namespace roced::agent
