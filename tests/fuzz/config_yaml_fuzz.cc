// Fuzz target 1: the config file. YAML text -> DecodeYamlConfig (the
// pre-scan, yaml-cpp, the descriptor walk) -> ValidateConfig with source
// positions -> the issue renderings roced --check-config prints; for a
// config that validates, the documented round trip: EncodeYamlConfig gives
// YAML the decoder takes back to the same message, and ApplyDefaults is
// idempotent.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "google/protobuf/util/message_differencer.h"
#include "model/config_yaml.h"
#include "model/validate.h"

using google::protobuf::util::MessageDifferencer;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  roced::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace model = roced::model;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<roced::v1::ValidationIssue> issues;
  auto decoded = model::DecodeYamlConfig(text, &issues);
  if (!decoded.ok()) {
    FUZZ_CHECK(!issues.empty(), "a refused file names at least one issue");
    (void)model::FormatIssues("fuzz.yaml", issues);
    return 0;
  }
  model::ValidateConfig(decoded->config, &decoded->positions, &issues);
  (void)model::FormatIssues("fuzz.yaml", issues);
  (void)model::ErrorSummary(issues);
  if (model::HasErrors(issues)) return 0;

  const std::string encoded = model::EncodeYamlConfig(decoded->config);
  std::vector<roced::v1::ValidationIssue> again_issues;
  auto again = model::DecodeYamlConfig(encoded, &again_issues);
  FUZZ_CHECK(again.ok(), "EncodeYamlConfig's output decodes");
  FUZZ_CHECK(MessageDifferencer::Equals(again->config, decoded->config),
             "EncodeYamlConfig -> DecodeYamlConfig gives the same config");

  roced::v1::NodeConfig once = decoded->config;
  model::ApplyDefaults(&once);
  roced::v1::NodeConfig twice = once;
  model::ApplyDefaults(&twice);
  FUZZ_CHECK(MessageDifferencer::Equals(once, twice), "ApplyDefaults is idempotent");
  return 0;
}
