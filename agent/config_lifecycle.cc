#include "agent/config_lifecycle.h"

#include "absl/strings/str_cat.h"
#include "util/proto_time.h"

namespace roced::agent {

namespace {

bool Expired(const roced::v1::AcceptedConfig& a, absl::Time now) {
  return a.provisional() && util::FromProto(a.confirm_deadline()) <= now;
}

std::string SourceName(const roced::v1::AcceptedConfig& a) {
  return roced::v1::ConfigSource_Name(a.source());
}

}  // namespace

roced::v1::AcceptedConfig ReturnFromProvisional(const roced::v1::AcceptedConfig& provisional) {
  roced::v1::AcceptedConfig back;
  back.set_source(roced::v1::CONFIG_SOURCE_CONFIRM_TIMEOUT);
  back.set_path(provisional.path());
  back.set_file_digest(provisional.file_digest());
  *back.mutable_config() = provisional.previous();
  return back;
}

std::optional<StartupChoice> ResolveStartupConfig(
    const std::optional<roced::v1::AcceptedConfig>& persisted,
    const std::optional<roced::v1::AcceptedConfig>& file, absl::Time now) {
  StartupChoice c;
  const uint64_t generation = persisted ? persisted->generation() : 0;
  std::optional<roced::v1::AcceptedConfig> resume = persisted;
  // Resuming what was persisted keeps its generation; anything else is the
  // next one.
  uint64_t resume_base = generation > 0 ? generation - 1 : 0;
  std::string expired;
  if (persisted && Expired(*persisted, now)) {
    resume = ReturnFromProvisional(*persisted);
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

}  // namespace roced::agent
