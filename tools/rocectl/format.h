// rocectl's renderings of API messages: human tables, proto3 JSON, YAML.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "roced/v1/state.pb.h"

namespace roced::ctl {

enum class Output { kTable, kJson, kYaml };

// Parses -o values "table", "json", "yaml".
absl::StatusOr<Output> ParseOutput(const std::string& text);

// proto3 JSON mapping (lowerCamelCase names, enums by name, zero values
// printed so scripts can rely on every field being there).
std::string ToJson(const google::protobuf::Message& message);
// The same on one line (no whitespace, no newline): one NDJSON record.
std::string ToJsonLine(const google::protobuf::Message& message);
// The same document as YAML (block style).
std::string ToYaml(const google::protobuf::Message& message);
// Any JSON document as block-style YAML.
std::string JsonToYaml(const std::string& json);

// The status table: node line, devices, ports, GIDs, and warnings for what
// operators most often miss (degraded PCIe, port down, no RoCE v2 GID).
std::string StatusTable(const roced::v1::NodeState& state);

}  // namespace roced::ctl
