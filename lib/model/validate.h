// Semantic validation of a desired NodeConfig: ranges, contradictions and
// cross-field checks the schema cannot express. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/config_yaml.h"
#include "roced/v1/agent.pb.h"
#include "google/protobuf/duration.pb.h"
#include "roced/v1/config.pb.h"

namespace roced::model {

// Limits, shared with the docs and the CLI.
inline constexpr uint32_t kMinMtu = 576;
inline constexpr uint32_t kMaxMtu = 9978;

// Appends every problem found to `issues`: errors (the config must be
// rejected) and warnings (accepted, but probably not what the operator
// meant, e.g. a PFC priority no DSCP maps to under DSCP trust). `positions`
// (may be null) adds YAML line/column to each issue. At most
// config_limits::kMaxIssues are appended, then one saying how many more
// there were; a config over a count cap gets only the cap errors (besides
// those of its top-level apiVersion, kind and mode).
void ValidateConfig(const roced::v1::NodeConfig& config, const SourceMap* positions,
                    std::vector<roced::v1::ValidationIssue>* issues);

// The count caps of model/config_limits.h and probe_limits.h alone, read off
// the sizes of the config's repeated fields and maps (no entry is looked at):
// what ValidateConfig checks first, and all it checks when a cap is
// exceeded. Appends one error per exceeded cap (naming the field and the
// cap) to `issues`; false when any cap is exceeded.
bool CheckConfigBounds(const roced::v1::NodeConfig& config,
                       std::vector<roced::v1::ValidationIssue>* issues);

// What is wrong with `d` as a google.protobuf.Duration (|nanos| below one
// second, nanos carrying the seconds' sign, seconds within +-10000 years),
// or nullopt when it is normalized.
std::optional<std::string> DurationProblem(const google::protobuf::Duration& d);

// True when any issue is an error.
bool HasErrors(const std::vector<roced::v1::ValidationIssue>& issues);

// The errors on one line, "path: message; path: message" (what an RPC's
// INVALID_ARGUMENT says).
std::string ErrorSummary(const std::vector<roced::v1::ValidationIssue>& issues);

// Parses a hugepage size ("2Mi", "1Gi", "2048kB", "1048576kB") to kB; 0 when
// not one of the sizes x86-64 supports.
uint64_t HugepageSizeKb(const std::string& size);

// The share of the node's memory the hugepage pools may reserve at most,
// leaving the kernel, the agent and the node's processes the rest.
inline constexpr double kMaxHugepageShareOfMemory = 0.9;

// The bytes the config's hugepage pools reserve: per page size, the larger
// of the node-wide count and the sum of the per-NUMA-node counts (the
// node-wide pool is the sum of the nodes'), times the size.
uint64_t HugepageBytes(const roced::v1::NodeConfig& config);

// INVALID_ARGUMENT naming the pools, their bytes and the node's memory when
// they would take more than kMaxHugepageShareOfMemory of `mem_total_bytes`.
// Not part of ValidateConfig: it depends on the node.
absl::Status CheckHugepagesFitMemory(const roced::v1::NodeConfig& config, uint64_t mem_total_bytes);

// Fills defaults the agent uses for absent settings (mode enforce, reconcile
// interval 30s, probe and watchdog defaults). Idempotent.
void ApplyDefaults(roced::v1::NodeConfig* config);

// Loads, decodes and validates a config file. Returns the config, or
// INVALID_ARGUMENT whose message is FormatIssues() of every error.
// Warnings are appended to `warnings` when non-null; the text read goes to
// `text` when non-null (the file is read once: what is digested is what was
// validated).
absl::StatusOr<roced::v1::NodeConfig> LoadConfigFile(
    const std::string& path, std::vector<roced::v1::ValidationIssue>* warnings, std::string* text = nullptr);

}  // namespace roced::model
