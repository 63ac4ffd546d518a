#include "agent/core/config_lifecycle.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"
#include "model/config_yaml.h"
#include "model/confirm_policy.h"
#include "model/validate.h"
#include "reconcile/journal.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/proto_time.h"

namespace roced::agent {

namespace {

bool Expired(const roced::v1::AcceptedConfig& a, absl::Time now) {
  return a.provisional() && util::FromProto(a.confirm_deadline()) <= now;
}

std::string SourceName(const roced::v1::AcceptedConfig& a) {
  return roced::v1::ConfigSource_Name(a.source());
}

// FNV-1a of the file's text: tells an edited file from the one last read.
std::string Digest(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrCat(absl::Hex(h, absl::kZeroPad16));
}

}  // namespace

absl::StatusOr<std::optional<roced::v1::AcceptedConfig>> ReadConfigFile(const std::string& path,
                                                                        bool optional) {
  if (optional && !util::PathExists(path)) return std::nullopt;
  // LoadConfigFile refuses a file over the size cap before reading it, and
  // hands back the text it validated for the digest.
  std::vector<roced::v1::ValidationIssue> warnings;
  std::string text;
  absl::StatusOr<roced::v1::NodeConfig> config = model::LoadConfigFile(path, &warnings, &text);
  for (const auto& w : warnings) {
    std::string line = model::FormatIssues(path, {w});
    if (!line.empty() && line.back() == '\n') line.pop_back();
    LOG_WARNING << line;
  }
  if (!config.ok()) return config.status();
  roced::v1::AcceptedConfig file;
  file.set_source(roced::v1::CONFIG_SOURCE_FILE);
  file.set_path(path);
  file.set_file_digest(Digest(text));
  *file.mutable_config() = *std::move(config);
  model::ApplyDefaults(file.mutable_config());
  return file;
}

roced::v1::AcceptedConfig AcceptFromApply(const roced::v1::AcceptedConfig& current,
                                          const std::string& config_path,
                                          const roced::v1::NodeConfig& config, absl::Duration confirm,
                                          absl::Time now, const std::vector<roced::v1::PriorValue>& prior) {
  roced::v1::AcceptedConfig next;
  next.set_source(roced::v1::CONFIG_SOURCE_GRPC);
  next.set_path(config_path);
  next.set_file_digest(current.file_digest());
  *next.mutable_config() = config;
  if (confirm <= absl::ZeroDuration()) return next;
  next.set_provisional(true);
  *next.mutable_previous() = current.provisional() ? current.previous() : current.config();
  *next.mutable_confirm_deadline() = util::ToProto(now + confirm);
  std::vector<roced::v1::PriorValue> older;
  if (current.provisional()) older.assign(current.prior().begin(), current.prior().end());
  for (const auto& p : reconcile::MergePrior(older, prior)) *next.add_prior() = p;
  return next;
}

roced::v1::AcceptedConfig Confirmed(const roced::v1::AcceptedConfig& provisional) {
  roced::v1::AcceptedConfig confirmed = provisional;
  confirmed.set_provisional(false);
  confirmed.clear_previous();
  confirmed.clear_prior();
  confirmed.clear_confirm_deadline();
  confirmed.clear_confirm_policy();
  confirmed.clear_baseline();
  return confirmed;
}

bool SameAccepted(const roced::v1::AcceptedConfig& current, const roced::v1::AcceptedConfig& next) {
  return current.config().api_version() == "roced/v1" && current.source() == next.source() &&
         google::protobuf::util::MessageDifferencer::Equals(current.config(), next.config());
}

roced::v1::AcceptedConfig ReturnFromProvisional(const roced::v1::AcceptedConfig& provisional,
                                                roced::v1::ConfigRollback why) {
  roced::v1::AcceptedConfig back;
  back.set_source(why.reason() == model::kReasonConfirmTimeout ? roced::v1::CONFIG_SOURCE_CONFIRM_TIMEOUT
                  : why.reason() == model::kReasonRollback     ? roced::v1::CONFIG_SOURCE_ROLLBACK
                                                               : roced::v1::CONFIG_SOURCE_CONFIRM_GATE);
  why.set_generation(provisional.generation());
  why.set_returned_to(provisional.generation() + 1);
  *back.mutable_last_rollback() = std::move(why);
  back.set_path(provisional.path());
  back.set_file_digest(provisional.file_digest());
  *back.mutable_config() = provisional.previous();
  return back;
}

namespace {

std::optional<StartupChoice> Choose(const std::optional<roced::v1::AcceptedConfig>& persisted,
                                    const std::optional<roced::v1::AcceptedConfig>& file, absl::Time now) {
  StartupChoice c;
  const uint64_t generation = persisted ? persisted->generation() : 0;
  std::optional<roced::v1::AcceptedConfig> resume = persisted;
  // Resuming what was persisted keeps its generation; anything else is the
  // next one.
  uint64_t resume_base = generation > 0 ? generation - 1 : 0;
  std::string expired;
  if (persisted && Expired(*persisted, now)) {
    roced::v1::ConfigRollback why;
    why.set_reason(model::kReasonConfirmTimeout);
    why.set_detail("the confirm deadline passed while the agent was down");
    *why.mutable_at() = util::ToProto(now);
    resume = ReturnFromProvisional(*persisted, std::move(why));
    resume_base = generation;
    c.restore.assign(persisted->prior().begin(), persisted->prior().end());
    expired = absl::StrCat("provisional generation ", generation,
                           " expired while the agent was down; ");
  } else if (resume && resume->config().api_version() != "roced/v1") {
    resume.reset();  // nothing that could be resumed (generation still counts)
  }
  if (!file) {
    if (!resume) return std::nullopt;
    c.accept = *resume;
    c.base_generation = resume_base;
    c.why = absl::StrCat(expired, "no config file; resuming ", expired.empty() ? "generation " : "the previous config of ",
                         generation, " (", SourceName(c.accept), ")");
    return c;
  }
  if (!resume) {
    c.accept = *file;
    c.base_generation = generation;
    c.why = absl::StrCat("config file ", file->path());
  } else if (resume->file_digest() != file->file_digest()) {
    c.accept = *file;
    c.base_generation = generation;
    c.why = absl::StrCat(expired, file->path(), " changed since it was last read; it wins over the persisted ",
                         SourceName(*resume), " config");
  } else if (resume->source() != roced::v1::CONFIG_SOURCE_FILE) {
    c.accept = *resume;
    c.base_generation = resume_base;
    c.why = absl::StrCat(expired, "resuming ", SourceName(*resume), " config; ", file->path(),
                         " is unchanged since it was last read");
  } else {
    c.accept = *file;
    c.base_generation = resume_base;
    c.why = absl::StrCat(expired, "config file ", file->path(), " (unchanged)");
  }
  return c;
}

}  // namespace

std::optional<StartupChoice> ResolveStartupConfig(
    const std::optional<roced::v1::AcceptedConfig>& persisted,
    const std::optional<roced::v1::AcceptedConfig>& file, absl::Time now) {
  std::optional<StartupChoice> c = Choose(persisted, file, now);
  // The last rollback stays on record whichever config is taken up.
  if (c && !c->accept.has_last_rollback() && persisted && persisted->has_last_rollback()) {
    *c->accept.mutable_last_rollback() = persisted->last_rollback();
  }
  return c;
}

}  // namespace roced::agent
