#include "model/config_yaml.h"

#include <algorithm>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <limits>
#include <optional>
#include <sstream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/reflection.h"
#include "model/config_limits.h"
#include "util/escape.h"
#include "util/utf8.h"
#include "util/proto_time.h"

namespace roced::model {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using roced::v1::Severity;
using roced::v1::ValidationIssue;

SourcePos PosOf(const YAML::Node& node) {
  YAML::Mark m = node.Mark();
  if (m.is_null()) return {};
  return {static_cast<uint32_t>(m.line + 1), static_cast<uint32_t>(m.column + 1)};
}

// "TRUST" for Trust, "ROCE_MODE" for RoceMode: the prefix protobuf style
// puts on every value of an enum.
std::string EnumPrefix(const EnumDescriptor* e) {
  std::string out;
  const std::string& name = e->name();
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (i > 0 && absl::ascii_isupper(c) && absl::ascii_islower(name[i - 1])) out += '_';
    out += absl::ascii_toupper(c);
  }
  return out + "_";
}

class Decoder {
 public:
  explicit Decoder(std::vector<ValidationIssue>* issues) : issues_(issues) {}

  void DecodeMessage(const YAML::Node& node, const std::string& path, Message* msg) {
    positions_[path.empty() ? "." : path] = PosOf(node);
    if (node.IsNull()) return;  // `qos:` with nothing under it: present, empty.
    if (!node.IsMap()) {
      Error(node, path, absl::StrCat("expected a mapping of ", msg->GetDescriptor()->name(),
                                     " fields, found ", KindName(node)));
      return;
    }
    const Descriptor* desc = msg->GetDescriptor();
    absl::flat_hash_set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      if (!key.IsScalar()) {
        Error(key, path, "mapping keys must be plain field names");
        continue;
      }
      const std::string& name = key.Scalar();
      const FieldDescriptor* field = desc->FindFieldByName(name);
      if (field == nullptr) {
        for (int i = 0; i < desc->field_count() && field == nullptr; ++i) {
          if (desc->field(i)->json_name() == name) field = desc->field(i);
        }
      }
      std::string fpath = Join(path, name);
      if (field == nullptr) {
        std::vector<std::string> allowed;
        for (int i = 0; i < desc->field_count(); ++i) {
          allowed.push_back(desc->field(i)->name() == "api_version" ? "apiVersion"
                                                                    : desc->field(i)->name());
        }
        Error(key, fpath,
              absl::StrCat("unknown field ", util::Quoted(name), "; allowed: ", absl::StrJoin(allowed, ", ")));
        continue;
      }
      fpath = Join(path, field->name() == "api_version" ? "apiVersion" : field->name());
      if (!seen.insert(field->name()).second) {
        Error(key, fpath, "field given twice");
        continue;
      }
      if (const auto* oneof = field->real_containing_oneof()) {
        const FieldDescriptor* set = msg->GetReflection()->GetOneofFieldDescriptor(*msg, oneof);
        if (set != nullptr) {
          Error(key, fpath,
                absl::StrCat("only one of ", OneofNames(oneof), " may be given (",
                             set->name(), " is already set)"));
          continue;
        }
      }
      DecodeField(value, fpath, msg, field);
    }
  }

  SourceMap TakePositions() { return std::move(positions_); }

  // One issue saying how many were not listed, when any were not.
  void Finish() {
    if (unlisted_ == 0) return;
    ValidationIssue issue;
    issue.set_message(absl::StrCat(unlisted_, " more error(s) not listed (at most ",
                                   config_limits::kMaxIssues, " are reported)"));
    issue.set_severity(roced::v1::SEVERITY_ERROR);
    issues_->push_back(std::move(issue));
    unlisted_ = 0;
  }

 private:
  static std::string Join(const std::string& path, const std::string& name) {
    return path.empty() ? name : absl::StrCat(path, ".", name);
  }

  static std::string OneofNames(const google::protobuf::OneofDescriptor* oneof) {
    std::vector<std::string> names;
    for (int i = 0; i < oneof->field_count(); ++i) names.push_back(oneof->field(i)->name());
    return absl::StrJoin(names, ", ");
  }

  static std::string KindName(const YAML::Node& node) {
    switch (node.Type()) {
      case YAML::NodeType::Null: return "nothing";
      case YAML::NodeType::Scalar: return util::Quoted(node.Scalar());
      case YAML::NodeType::Sequence: return "a sequence";
      case YAML::NodeType::Map: return "a mapping";
      default: return "an undefined node";
    }
  }

  void Error(const YAML::Node& node, const std::string& path, const std::string& message) {
    if (reported_ >= config_limits::kMaxIssues) {
      ++unlisted_;
      return;
    }
    ++reported_;
    ValidationIssue issue;
    issue.set_path(path);
    issue.set_message(message);
    issue.set_severity(roced::v1::SEVERITY_ERROR);
    SourcePos pos = PosOf(node);
    issue.set_line(pos.line);
    issue.set_column(pos.column);
    issues_->push_back(std::move(issue));
  }

  void DecodeField(const YAML::Node& value, const std::string& path, Message* msg,
                   const FieldDescriptor* field) {
    positions_[path] = PosOf(value);
    const Reflection* refl = msg->GetReflection();
    if (field->is_map()) {
      if (!value.IsMap()) {
        if (!value.IsNull()) Error(value, path, absl::StrCat("expected a mapping, found ", KindName(value)));
        return;
      }
      const FieldDescriptor* key_field = field->message_type()->map_key();
      const FieldDescriptor* val_field = field->message_type()->map_value();
      absl::flat_hash_set<std::string> seen;
      for (auto it = value.begin(); it != value.end(); ++it) {
        std::string epath = absl::StrCat(path, "[", it->first.IsScalar() ? it->first.Scalar() : "?", "]");
        if (it->first.IsScalar() && !seen.insert(it->first.Scalar()).second) {
          Error(it->first, epath, "key given twice");
          continue;
        }
        Message* entry = refl->AddMessage(msg, field);
        if (!SetScalar(it->first, epath, entry, key_field) ||
            !SetScalar(it->second, epath, entry, val_field)) {
          refl->RemoveLast(msg, field);
        }
        positions_[epath] = PosOf(it->second);
      }
      return;
    }
    if (field->is_repeated()) {
      if (!value.IsSequence()) {
        if (!value.IsNull()) Error(value, path, absl::StrCat("expected a sequence, found ", KindName(value)));
        return;
      }
      for (size_t i = 0; i < value.size(); ++i) {
        std::string epath = absl::StrCat(path, "[", i, "]");
        positions_[epath] = PosOf(value[i]);
        if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          DecodeMessage(value[i], epath, refl->AddMessage(msg, field));
        } else {
          SetScalar(value[i], epath, msg, field);
        }
      }
      return;
    }
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->message_type()->full_name() == "google.protobuf.Duration") {
        SetDuration(value, path, refl->MutableMessage(msg, field));
        return;
      }
      DecodeMessage(value, path, refl->MutableMessage(msg, field));
      return;
    }
    SetScalar(value, path, msg, field);
  }

  void SetDuration(const YAML::Node& value, const std::string& path, Message* msg) {
    absl::Duration d;
    if (!value.IsScalar() || !absl::ParseDuration(value.Scalar(), &d) || d < absl::ZeroDuration()) {
      Error(value, path,
            absl::StrCat("expected a duration such as 500ms, 30s or 5m, found ", KindName(value)));
      return;
    }
    auto* dur = static_cast<google::protobuf::Duration*>(msg);
    int64_t secs = absl::IDivDuration(d, absl::Seconds(1), &d);
    dur->set_seconds(secs);
    dur->set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(d)));
  }

  // Sets a scalar (or appends, for repeated fields). False on error.
  bool SetScalar(const YAML::Node& value, const std::string& path, Message* msg,
                 const FieldDescriptor* field) {
    if (!value.IsScalar()) {
      Error(value, path, absl::StrCat("expected ", TypeName(field), ", found ", KindName(value)));
      return false;
    }
    const std::string& text = value.Scalar();
    const Reflection* refl = msg->GetReflection();
    const bool rep = field->is_repeated();
    auto fail = [&]() {
      Error(value, path, absl::StrCat(util::Quoted(text), " is not ", TypeName(field)));
      return false;
    };
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_UINT32: {
        uint64_t v;
        if (!absl::SimpleAtoi(text, &v) || v > std::numeric_limits<uint32_t>::max()) return fail();
        rep ? refl->AddUInt32(msg, field, static_cast<uint32_t>(v))
            : refl->SetUInt32(msg, field, static_cast<uint32_t>(v));
        return true;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        uint64_t v;
        if (!absl::SimpleAtoi(text, &v)) return fail();
        rep ? refl->AddUInt64(msg, field, v) : refl->SetUInt64(msg, field, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_INT32: {
        int32_t v;
        if (!absl::SimpleAtoi(text, &v)) return fail();
        rep ? refl->AddInt32(msg, field, v) : refl->SetInt32(msg, field, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        int64_t v;
        if (!absl::SimpleAtoi(text, &v)) return fail();
        rep ? refl->AddInt64(msg, field, v) : refl->SetInt64(msg, field, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        bool v;
        if (!absl::SimpleAtob(text, &v)) return fail();
        rep ? refl->AddBool(msg, field, v) : refl->SetBool(msg, field, v);
        return true;
      }
      case FieldDescriptor::CPPTYPE_STRING:
        // proto3 strings must be UTF-8: a config holding other bytes would
        // not survive GetState or the state directory (found by
        // tests/fuzz/config_yaml).
        if (field->type() == FieldDescriptor::TYPE_STRING && !util::IsValidUtf8(text)) {
          Error(value, path, absl::StrCat(util::Quoted(text), " is not valid UTF-8"));
          return false;
        }
        rep ? refl->AddString(msg, field, text) : refl->SetString(msg, field, text);
        return true;
      case FieldDescriptor::CPPTYPE_ENUM: {
        const EnumValueDescriptor* found = nullptr;
        std::vector<std::string> allowed;
        const EnumDescriptor* e = field->enum_type();
        for (int i = 0; i < e->value_count(); ++i) {
          if (e->value(i)->number() == 0) continue;
          std::string yaml_name = EnumValueYamlName(e->value(i));
          allowed.push_back(yaml_name);
          if (absl::EqualsIgnoreCase(yaml_name, text) || e->value(i)->name() == text) {
            found = e->value(i);
          }
        }
        if (found == nullptr) {
          Error(value, path,
                absl::StrCat(util::Quoted(text), " is not one of: ", absl::StrJoin(allowed, ", ")));
          return false;
        }
        rep ? refl->AddEnum(msg, field, found) : refl->SetEnum(msg, field, found);
        return true;
      }
      default:
        Error(value, path, "unsupported field type");
        return false;
    }
  }

  static std::string TypeName(const FieldDescriptor* field) {
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_UINT32: return "a non-negative integer (0-4294967295)";
      case FieldDescriptor::CPPTYPE_UINT64: return "a non-negative integer";
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64: return "an integer";
      case FieldDescriptor::CPPTYPE_BOOL: return "true or false";
      case FieldDescriptor::CPPTYPE_STRING: return "a string";
      case FieldDescriptor::CPPTYPE_ENUM: return "a name";
      default: return "a value";
    }
  }

  std::vector<ValidationIssue>* issues_;
  SourceMap positions_;
  size_t reported_ = 0;
  size_t unlisted_ = 0;
};

// Walks the parser's events (yaml-cpp builds no tree for them) and stops at
// the first anchor or alias, or past the node budget.
class YamlScreen final : public YAML::EventHandler {
 public:
  // Set once something was refused; `mark` is where.
  std::string problem;
  YAML::Mark mark = YAML::Mark::null_mark();

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t anchor) override { Node(m, anchor); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override {
    Refuse(m, "YAML aliases (*name) are not supported; write the value out");
  }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Node(m, anchor);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Node(m, anchor);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Node(m, anchor);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& m, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) {
      Refuse(m, "YAML anchors (&name) are not supported; write the value out");
    } else if (++nodes_ > config_limits::kMaxYamlNodes) {
      Refuse(m, absl::StrCat("the config has more than ", config_limits::kMaxYamlNodes,
                             " YAML nodes; allowed at most ", config_limits::kMaxYamlNodes));
    }
  }
  void Refuse(const YAML::Mark& m, std::string what) {
    if (!problem.empty()) return;
    problem = std::move(what);
    mark = m;
  }
  size_t nodes_ = 0;
};

// Runs YamlScreen over the first document of `text` (the one YAML::Load
// reads). Throws what the parser throws on a syntax error.
std::optional<ValidationIssue> ScreenYaml(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  YamlScreen screen;
  parser.HandleNextDocument(screen);
  if (screen.problem.empty()) return std::nullopt;
  ValidationIssue issue;
  issue.set_message(screen.problem);
  issue.set_severity(roced::v1::SEVERITY_ERROR);
  if (!screen.mark.is_null()) {
    issue.set_line(static_cast<uint32_t>(screen.mark.line + 1));
    issue.set_column(static_cast<uint32_t>(screen.mark.column + 1));
  }
  return issue;
}

void EmitMessage(YAML::Emitter& out, const Message& msg);

void EmitScalar(YAML::Emitter& out, const Message& msg, const FieldDescriptor* f, int index) {
  const Reflection* r = msg.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT32:
      out << (rep ? r->GetRepeatedUInt32(msg, f, index) : r->GetUInt32(msg, f));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      out << (rep ? r->GetRepeatedUInt64(msg, f, index) : r->GetUInt64(msg, f));
      break;
    case FieldDescriptor::CPPTYPE_INT32:
      out << (rep ? r->GetRepeatedInt32(msg, f, index) : r->GetInt32(msg, f));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      out << (rep ? r->GetRepeatedInt64(msg, f, index) : r->GetInt64(msg, f));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      out << (rep ? r->GetRepeatedBool(msg, f, index) : r->GetBool(msg, f));
      break;
    case FieldDescriptor::CPPTYPE_STRING: {
      const std::string text = rep ? r->GetRepeatedString(msg, f, index) : r->GetString(msg, f);
      // yaml-cpp writes control characters into plain scalars as they are,
      // and a reader folds a carriage return or tab there into something
      // else: such strings are written double-quoted, escaped (found by the
      // fuzz targets' round-trip check).
      const bool control = std::any_of(text.begin(), text.end(), [](char ch) {
        const auto c = static_cast<unsigned char>(ch);
        return c < 0x20 || c == 0x7f;
      });
      if (control) out << YAML::DoubleQuoted;
      out << text;
      break;
    }
    case FieldDescriptor::CPPTYPE_ENUM:
      out << EnumValueYamlName(rep ? r->GetRepeatedEnum(msg, f, index) : r->GetEnum(msg, f));
      break;
    case FieldDescriptor::CPPTYPE_MESSAGE: {
      const Message& sub = rep ? r->GetRepeatedMessage(msg, f, index) : r->GetMessage(msg, f);
      if (sub.GetDescriptor()->full_name() == "google.protobuf.Duration") {
        const auto& d = static_cast<const google::protobuf::Duration&>(sub);
        out << absl::FormatDuration(util::FromProto(d));
      } else {
        EmitMessage(out, sub);
      }
      break;
    }
    default:
      out << YAML::Null;
  }
}

void EmitMessage(YAML::Emitter& out, const Message& msg) {
  out << YAML::BeginMap;
  std::vector<const FieldDescriptor*> fields;
  msg.GetReflection()->ListFields(msg, &fields);
  for (const FieldDescriptor* f : fields) {
    out << YAML::Key << (f->name() == "api_version" ? std::string("apiVersion") : f->name());
    out << YAML::Value;
    if (f->is_map()) {
      out << YAML::BeginMap;
      const Reflection* r = msg.GetReflection();
      for (int i = 0; i < r->FieldSize(msg, f); ++i) {
        const Message& entry = r->GetRepeatedMessage(msg, f, i);
        out << YAML::Key;
        EmitScalar(out, entry, entry.GetDescriptor()->map_key(), -1);
        out << YAML::Value;
        EmitScalar(out, entry, entry.GetDescriptor()->map_value(), -1);
      }
      out << YAML::EndMap;
    } else if (f->is_repeated()) {
      bool scalar = f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE;
      if (scalar) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (int i = 0; i < msg.GetReflection()->FieldSize(msg, f); ++i) EmitScalar(out, msg, f, i);
      out << YAML::EndSeq;
    } else {
      EmitScalar(out, msg, f, -1);
    }
  }
  out << YAML::EndMap;
}

}  // namespace

std::string EnumValueYamlName(const EnumValueDescriptor* value) {
  std::string prefix = EnumPrefix(value->type());
  std::string name = value->name();
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  return absl::AsciiStrToLower(name);
}

std::string ConfigTooLarge(size_t bytes) {
  return absl::StrCat("config is ", bytes, " bytes; the limit is ", config_limits::kMaxConfigBytes,
                      " (1 MiB)");
}

absl::StatusOr<DecodedConfig> DecodeYamlConfig(const std::string& text,
                                               std::vector<ValidationIssue>* issues) {
  if (text.size() > config_limits::kMaxConfigBytes) {
    ValidationIssue issue;
    issue.set_message(ConfigTooLarge(text.size()));
    issue.set_severity(roced::v1::SEVERITY_ERROR);
    issues->push_back(std::move(issue));
    return absl::InvalidArgumentError(ConfigTooLarge(text.size()));
  }
  YAML::Node root;
  // yaml-cpp reports syntax errors by exception; they stop here.
  try {
    if (std::optional<ValidationIssue> refused = ScreenYaml(text)) {
      issues->push_back(*std::move(refused));
      return absl::InvalidArgumentError("config uses YAML features roced does not take");
    }
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    ValidationIssue issue;
    issue.set_message(absl::StrCat("YAML syntax error: ", e.msg));
    issue.set_severity(roced::v1::SEVERITY_ERROR);
    if (!e.mark.is_null()) {
      issue.set_line(static_cast<uint32_t>(e.mark.line + 1));
      issue.set_column(static_cast<uint32_t>(e.mark.column + 1));
    }
    issues->push_back(std::move(issue));
    return absl::InvalidArgumentError("config is not valid YAML");
  }
  if (!root.IsMap()) {
    ValidationIssue issue;
    issue.set_message("the config must be a mapping with apiVersion: roced/v1 and kind: NodeConfig");
    issue.set_severity(roced::v1::SEVERITY_ERROR);
    SourcePos pos = PosOf(root);
    issue.set_line(pos.line);
    issue.set_column(pos.column);
    issues->push_back(std::move(issue));
    return absl::InvalidArgumentError("config is empty or not a mapping");
  }
  DecodedConfig out;
  size_t before = issues->size();
  Decoder decoder(issues);
  try {
    decoder.DecodeMessage(root, "", &out.config);
  } catch (const YAML::Exception& e) {
    ValidationIssue issue;
    issue.set_message(absl::StrCat("YAML error: ", e.msg));
    issue.set_severity(roced::v1::SEVERITY_ERROR);
    issues->push_back(std::move(issue));
  }
  decoder.Finish();
  out.positions = decoder.TakePositions();
  if (issues->size() > before) {
    return absl::InvalidArgumentError(
        absl::StrCat("config has ", issues->size() - before, " error(s)"));
  }
  return out;
}

std::string EncodeYamlConfig(const roced::v1::NodeConfig& config) {
  YAML::Emitter out;
  EmitMessage(out, config);
  return std::string(out.c_str()) + "\n";
}

std::string FormatIssues(const std::string& source_name,
                         const std::vector<ValidationIssue>& issues) {
  std::string out;
  for (const ValidationIssue& issue : issues) {
    absl::StrAppend(&out, source_name);
    if (issue.line() > 0) absl::StrAppend(&out, ":", issue.line(), ":", issue.column());
    absl::StrAppend(&out, ": ",
                    issue.severity() == roced::v1::SEVERITY_WARNING ? "warning" : "error", ": ");
    if (!issue.path().empty()) absl::StrAppend(&out, issue.path(), ": ");
    absl::StrAppend(&out, issue.message(), "\n");
  }
  return out;
}

}  // namespace roced::model
