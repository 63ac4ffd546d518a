// One discovery run and what it changes: the devices in PublishedState, the
// "discovery" component's health, its metrics and one device event a
// change on WatchState. The Agent's discovery loop runs it (one run at a
// time).
#pragma once

#include <string>

#include "agent/core/agent_metrics.h"
#include "agent/core/discovery.h"
#include "agent/core/event_bus.h"
#include "agent/core/published_state.h"
#include "util/clock.h"

namespace roced::agent {

class DeviceRefresh {
 public:
  // Every pointer must outlive this object.
  DeviceRefresh(DeviceDiscovery* discovery, const AgentMetrics* metrics, PublishedState* published, EventBus* bus,
                util::Clock* clock)
      : discovery_(discovery), metrics_(metrics), published_(published), bus_(bus), clock_(clock) {}

  // Discovers and publishes; `reason` names the trigger in logs and events.
  // True when a device came, went or changed; false when none did or the
  // run failed (logged, and the component unhealthy, saying why).
  bool Run(const std::string& reason) const;

 private:
  DeviceDiscovery* const discovery_;
  const AgentMetrics* const metrics_;
  PublishedState* const published_;
  EventBus* const bus_;
  util::Clock* const clock_;
};

}  // namespace roced::agent
