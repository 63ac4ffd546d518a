// YAML <-> roced.v1.NodeConfig. The YAML file and the gRPC message are one
// schema: the decoder walks the proto descriptor, so a field added to
// config.proto is accepted in YAML with no code change here.
//
// Mapping rules: keys are the proto field names (snake_case; the JSON names
// such as apiVersion are accepted too); enums are written without their type
// prefix, case-insensitively (`trust: dscp` -> TRUST_DSCP); Duration fields
// take strings like "250ms" or "1m30s"; maps take YAML mappings; repeated
// fields take sequences. Unknown keys, duplicate keys, wrong types and
// out-of-type-range numbers are errors carrying the field path and the
// line/column of the offending node.
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/config.pb.h"

namespace roced::model {

// 1-based line and column in the YAML source.
struct SourcePos {
  uint32_t line = 0;
  uint32_t column = 0;
};

// Field path ("interfaces[0].qos.pfc.priorities[1]") -> where it was written.
using SourceMap = absl::flat_hash_map<std::string, SourcePos>;

struct DecodedConfig {
  roced::v1::NodeConfig config;
  SourceMap positions;
};

// Decodes YAML text. On failure, returns INVALID_ARGUMENT and fills `issues`
// with the problems found (decoding continues past the first where it can;
// at most config_limits::kMaxIssues are listed, then one saying how many
// more there were). Refused before yaml-cpp builds anything: text over
// config_limits::kMaxConfigBytes, anchors and aliases (`&a`, `*a`: one alias
// can stand for a whole subtree, so a small file could expand into a huge
// config), and more than config_limits::kMaxYamlNodes nodes. yaml-cpp itself
// refuses nesting deeper than 2000 levels.
absl::StatusOr<DecodedConfig> DecodeYamlConfig(const std::string& text,
                                               std::vector<roced::v1::ValidationIssue>* issues);

// "config is N bytes; the limit is 1048576 (1 MiB)".
std::string ConfigTooLarge(size_t bytes);

// Encodes a config as YAML in the same form the decoder takes.
std::string EncodeYamlConfig(const roced::v1::NodeConfig& config);

// Renders issues one per line as "FILE:LINE:COL: error: PATH: MESSAGE" (the
// position is omitted when unknown).
std::string FormatIssues(const std::string& source_name,
                         const std::vector<roced::v1::ValidationIssue>& issues);

// The YAML spelling of an enum value: its name without the enum's prefix, in
// lower case (TRUST_DSCP -> "dscp", ROCE_MODE_V2 -> "v2").
std::string EnumValueYamlName(const google::protobuf::EnumValueDescriptor* value);

}  // namespace roced::model
