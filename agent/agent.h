// The agent's core: the current node state (discovered devices, accepted
// config, component health), the loops that keep it fresh, and the event
// stream behind WatchState. The gRPC service and main() sit on top of it.
//
// Threads: Start() runs a discovery thread (periodic backstop + netlink
// triggers) and the netlink monitor thread. Every public method is
// thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "hal/link_monitor.h"
#include "hal/paths.h"
#include "hal/sysfs_discovery.h"
#include "hal/verbs_devices.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::agent {

struct AgentOptions {
  hal::Paths paths;
  // YAML config file; empty means none.
  std::string config_path;
  // When the config file is absent: true -> start without desired state
  // (warning), false -> LoadConfig() fails.
  bool config_optional = false;
  std::string state_dir;
  // Periodic device re-discovery, the backstop behind netlink events.
  absl::Duration discovery_interval = absl::Seconds(10);
  // Open devices through libibverbs (only meaningful on the live sysfs).
  bool use_verbs = true;
  // Join rtnetlink groups for immediate refresh.
  bool use_netlink = true;
};

// One WatchState subscriber's queue. Events beyond `kMaxQueued` drop the
// oldest (a slow reader then gets a fresh full state instead).
class Subscription {
 public:
  static constexpr size_t kMaxQueued = 1024;
  // Waits up to `timeout` for the next event. False on timeout or when the
  // subscription was closed.
  bool Next(roced::v1::StateEvent* event, absl::Duration timeout);
  void Push(const roced::v1::StateEvent& event);
  void Close();
  bool closed() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<roced::v1::StateEvent> queue_;
  bool closed_ = false;
};

class Agent {
 public:
  explicit Agent(AgentOptions options);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Loads and validates the config file. On error the previously accepted
  // config stays in force and the error (with line, column, field path) is
  // returned and recorded in the state's config.last_error.
  absl::Status LoadConfig();

  // Re-discovers devices now; publishes device events for what changed.
  void RefreshDevices(const std::string& reason);

  // Starts the discovery loop and netlink monitor. Runs one discovery first.
  void Start();
  // Stops threads, closes verbs contexts and every subscription.
  void Stop();

  roced::v1::NodeState State() const;

  std::shared_ptr<Subscription> Subscribe();
  void Unsubscribe(const std::shared_ptr<Subscription>& sub);

  // Marks a component healthy or not (shown in GetState and metrics).
  void SetComponentHealth(const std::string& name, bool healthy, const std::string& message);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  const AgentOptions& options() const { return options_; }

 private:
  void Publish(roced::v1::StateEvent event);
  void DiscoveryLoop();

  const AgentOptions options_;
  hal::SysfsDiscovery discovery_;
  hal::VerbsDevices verbs_;
  std::unique_ptr<hal::LinkMonitor> monitor_;

  mutable absl::Mutex mu_;
  roced::v1::NodeState state_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Subscription>> subscribers_ ABSL_GUARDED_BY(mu_);

  absl::Mutex loop_mu_;
  bool stop_ ABSL_GUARDED_BY(loop_mu_) = false;
  bool refresh_requested_ ABSL_GUARDED_BY(loop_mu_) = false;
  std::string refresh_reason_ ABSL_GUARDED_BY(loop_mu_);
  std::thread loop_;

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* discovery_runs_;
  prometheus::Family<prometheus::Counter>* config_loads_;
  prometheus::Histogram* discovery_duration_;
};

}  // namespace roced::agent
