// Fuzz target 2: a NodeConfig as ApplyConfig receives it. Protobuf bytes ->
// ParseFromArray -> CheckConfigBounds (what the RPC front end checks before
// anything else) -> ValidateConfig (what the agent checks) -> the error
// summary the RPC returns. Properties: a config over a count cap gets only
// the cap errors (and the top-level scalars'); a config that validates encodes to YAML that decodes back
// to it (what rocectl shows can be applied again).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "google/protobuf/util/message_differencer.h"
#include "model/config_limits.h"
#include "model/config_yaml.h"
#include "model/validate.h"

using google::protobuf::util::MessageDifferencer;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  roced::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace model = roced::model;
  roced::v1::NodeConfig config;
  if (!config.ParseFromArray(data, static_cast<int>(size))) return 0;

  std::vector<roced::v1::ValidationIssue> bounds;
  const bool within = model::CheckConfigBounds(config, &bounds);
  FUZZ_CHECK(within == bounds.empty(), "CheckConfigBounds lists an issue exactly when it fails");
  std::vector<roced::v1::ValidationIssue> issues;
  model::ValidateConfig(config, nullptr, &issues);
  (void)model::ErrorSummary(issues);
  if (!within) {
    // Beyond the caps only the top-level scalars are looked at. (Past
    // kMaxIssues both lists are cut, at different places.)
    if (bounds.size() + 3 >= model::config_limits::kMaxIssues) return 0;
    size_t cap_errors = 0;
    for (const auto& issue : issues) {
      const std::string& path = issue.path();
      if (path == "apiVersion" || path == "kind" || path == "mode") continue;
      FUZZ_CHECK(cap_errors < bounds.size() && path == bounds[cap_errors].path() &&
                     issue.message() == bounds[cap_errors].message(),
                 "a config over a cap gets the cap errors and no entry's");
      ++cap_errors;
    }
    FUZZ_CHECK(cap_errors == bounds.size(), "every cap error is reported");
    return 0;
  }
  if (model::HasErrors(issues)) return 0;

  // Unknown fields are carried by the parsed message but are not config.
  config.DiscardUnknownFields();
  std::vector<roced::v1::ValidationIssue> decode_issues;
  auto again = model::DecodeYamlConfig(model::EncodeYamlConfig(config), &decode_issues);
  FUZZ_CHECK(again.ok(), "a valid config's YAML decodes");
  FUZZ_CHECK(MessageDifferencer::Equals(again->config, config), "the YAML decodes to the same config");
  return 0;
}
