// Values to write back to the node before the next reconcile: the priors
// of a provisional config that timed out, or of an apply the agent did not
// live to finish (found in the journal at start-up). While values are
// pending they are in the journal too, so an agent that dies before they
// are back finds them again at its next start.
//
// Threads: used under the agent's reconcile lock only; not synchronised
// itself. The StateDir is not owned.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/core/state_dir.h"
#include "reconcile/apply.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::agent {

class RestoreQueue {
 public:
  explicit RestoreQueue(const StateDir* dir) : dir_(dir) {}

  // At start-up: a journal left by an apply that did not land becomes
  // pending. One whose apply was accepted (`persisted` holds its generation)
  // is discarded.
  void LoadAtStartup(const std::optional<roced::v1::AcceptedConfig>& persisted);
  // The decision LoadAtStartup takes over the journal it read: false when
  // the journal's apply was accepted (the caller removes the journal), else
  // its values join the pending ones.
  bool AdoptJournal(const roced::v1::ApplyJournal& journal,
                    const std::optional<roced::v1::AcceptedConfig>& persisted);

  // Journals `prior` merged with what is already pending (the oldest value
  // of each field wins) and makes that the pending set.
  void Add(const std::string& reason, const std::vector<roced::v1::PriorValue>& prior);

  // Writes the pending values back. Returns nullopt when nothing was to be
  // written (the queue is then empty), else the apply's result; on success
  // the queue and the journal are cleared, on failure both stay.
  std::optional<roced::v1::ApplyResult> Run(const std::string& reason, reconcile::NodeIo* io);

  // Forgets the pending values (superseded by a new apply).
  void Drop();

  bool empty() const { return pending_.empty(); }
  size_t size() const { return pending_.size(); }

 private:
  void Clear();

  const StateDir* const dir_;
  std::vector<roced::v1::PriorValue> pending_;
};

}  // namespace roced::agent
