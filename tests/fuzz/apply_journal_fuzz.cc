// Fuzz target 4: <state-dir>/apply-journal.json as the agent reads it at
// start-up. Text -> ParseJournalJson (what StateDir::LoadJournal does with
// the file) -> RestoreQueue::AdoptJournal (kept or discarded against the
// persisted generation) -> the restore path: RestorePlan over the journal
// codecs and ApplyPlan on a fake node (restore_fuzz_node.h). Property: a
// journal that parses is written back by the agent in a form it reads again.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/core/restore_queue.h"
#include "agent/core/state_dir.h"
#include "fuzz_check.h"
#include "google/protobuf/util/message_differencer.h"
#include "restore_fuzz_node.h"

using google::protobuf::util::MessageDifferencer;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  roced::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<roced::v1::ApplyJournal> journal = roced::agent::ParseJournalJson(text);
  if (!journal.ok()) return 0;

  absl::StatusOr<std::string> json = roced::agent::StateJson(*journal);
  if (json.ok()) {
    absl::StatusOr<roced::v1::ApplyJournal> back = roced::agent::ParseJournalJson(*json);
    FUZZ_CHECK(back.ok(), "a journal the agent writes it reads back");
    FUZZ_CHECK(MessageDifferencer::Equals(*back, *journal), "and it reads back the same");
  }

  // The journal against a persisted config of the generation it was for
  // (its apply landed: discarded) and against none (adopted).
  roced::v1::AcceptedConfig landed;
  landed.set_generation(journal->for_generation());
  const roced::agent::StateDir none("");
  roced::agent::RestoreQueue discard(&none);
  const bool kept = discard.AdoptJournal(*journal, landed);
  FUZZ_CHECK(kept == (journal->for_generation() == 0), "only a rollback's journal outlives its apply");

  roced::agent::RestoreQueue queue(&none);
  if (!queue.AdoptJournal(*journal, std::nullopt)) return 0;
  roced::fuzz::RunRestore(&queue, std::vector<roced::v1::PriorValue>(journal->prior().begin(), journal->prior().end()));
  return 0;
}
