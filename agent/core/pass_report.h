// What one reconcile pass leaves behind: its metrics, the fields it found
// (PublishedState), drift and reconcile events (WatchState) and the log
// lines. The Agent runs the pass; this reports it. Called under the Agent's
// reconcile lock, one pass at a time.
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "agent/core/agent_metrics.h"
#include "agent/core/event_bus.h"
#include "agent/core/published_state.h"
#include "reconcile/enforce.h"

namespace roced::agent {

class PassReporter {
 public:
  // All three must outlive the reporter.
  PassReporter(const AgentMetrics* metrics, PublishedState* published, EventBus* bus)
      : metrics_(metrics), published_(published), bus_(bus) {}

  // `pass` over generation `generation`, which took `took`. A pass for a
  // config change reports its apply; any other pass found drift, and says
  // so field by field (corrected or, in observe mode, left).
  void Report(uint64_t generation, const std::string& reason, bool config_change,
              const reconcile::PassResult& pass, absl::Duration took) const;

 private:
  const AgentMetrics* const metrics_;
  PublishedState* const published_;
  EventBus* const bus_;
};

}  // namespace roced::agent
