#include "util/args.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace roced::util {

void ArgParser::AddString(const std::string& name, std::string* target,
                          const std::string& value_name, const std::string& help,
                          char short_name) {
  flags_.push_back({name, short_name, Kind::kString, target, value_name, help, *target});
}

void ArgParser::AddBool(const std::string& name, bool* target, const std::string& help,
                        char short_name) {
  flags_.push_back({name, short_name, Kind::kBool, target, "", help, ""});
}

void ArgParser::AddUint(const std::string& name, uint64_t* target, const std::string& value_name,
                        const std::string& help) {
  flags_.push_back({name, 0, Kind::kUint, target, value_name, help, absl::StrCat(*target)});
}

void ArgParser::AddDuration(const std::string& name, absl::Duration* target,
                            const std::string& value_name, const std::string& help) {
  flags_.push_back({name, 0, Kind::kDuration, target, value_name, help,
                    *target == absl::ZeroDuration() ? "" : absl::FormatDuration(*target)});
}

const ArgParser::Flag* ArgParser::Find(const std::string& name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const ArgParser::Flag* ArgParser::FindShort(char c) const {
  for (const Flag& f : flags_) {
    if (f.short_name == c) return &f;
  }
  return nullptr;
}

absl::Status ArgParser::Set(const Flag& flag, const std::string& value) {
  switch (flag.kind) {
    case Kind::kString:
      *static_cast<std::string*>(flag.target) = value;
      return absl::OkStatus();
    case Kind::kBool:
      if (value == "true" || value == "1" || value == "yes") {
        *static_cast<bool*>(flag.target) = true;
      } else if (value == "false" || value == "0" || value == "no") {
        *static_cast<bool*>(flag.target) = false;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.name, ": '", value, "' is not a boolean (true or false)"));
      }
      return absl::OkStatus();
    case Kind::kUint: {
      uint64_t v;
      if (!absl::SimpleAtoi(value, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.name, ": '", value, "' is not a non-negative integer"));
      }
      *static_cast<uint64_t*>(flag.target) = v;
      return absl::OkStatus();
    }
    case Kind::kDuration: {
      absl::Duration d;
      if (!absl::ParseDuration(value, &d) || d < absl::ZeroDuration()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", flag.name, ": '", value, "' is not a duration (examples: 500ms, 30s, 2m)"));
      }
      *static_cast<absl::Duration*>(flag.target) = d;
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unreachable");
}

absl::Status ArgParser::Parse(int argc, const char* const* argv, int first,
                              bool stop_at_positional, std::vector<std::string>* positional) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positional->push_back(argv[i]);
      break;
    }
    const Flag* flag = nullptr;
    std::string value;
    bool has_value = false;
    std::string shown;
    if (absl::StartsWith(arg, "--")) {
      std::string name = arg.substr(2);
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      flag = Find(name);
      shown = "--" + name;
      if (flag == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("unknown option ", shown));
      }
    } else if (arg.size() >= 2 && arg[0] == '-' && arg[1] != '-') {
      flag = FindShort(arg[1]);
      shown = arg.substr(0, 2);
      if (flag == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("unknown option ", shown));
      }
      if (arg.size() > 2) {
        value = arg.substr(2);
        has_value = true;
      }
    } else {
      if (stop_at_positional) {
        for (; i < argc; ++i) positional->push_back(argv[i]);
        break;
      }
      positional->push_back(arg);
      continue;
    }
    if (flag->kind == Kind::kBool && !has_value) {
      *static_cast<bool*>(flag->target) = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(
            absl::StrCat("option ", shown, " needs a value (", flag->value_name, ")"));
      }
      value = argv[++i];
    }
    if (absl::Status s = Set(*flag, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string WrapText(const std::string& text, size_t width, const std::string& indent) {
  std::string out;
  std::string line = indent;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (line.size() > indent.size() && line.size() + 1 + word.size() > width) {
      absl::StrAppend(&out, line, "\n");
      line = indent;
    }
    if (line.size() > indent.size()) line += ' ';
    absl::StrAppend(&line, word);
  }
  if (line.size() > indent.size()) absl::StrAppend(&out, line, "\n");
  return out;
}

std::string ArgParser::Help() const {
  std::string out;
  for (const Flag& f : flags_) {
    std::string head = "  ";
    if (f.short_name != 0) absl::StrAppend(&head, "-", std::string(1, f.short_name), ", ");
    absl::StrAppend(&head, "--", f.name);
    if (!f.value_name.empty()) absl::StrAppend(&head, " ", f.value_name);
    absl::StrAppend(&out, head, "\n");
    std::string help = f.help;
    if (!f.default_text.empty()) absl::StrAppend(&help, " Default: ", f.default_text, ".");
    absl::StrAppend(&out, WrapText(help, 80, "        "));
  }
  return out;
}

std::vector<std::string> ArgParser::FlagNames() const {
  std::vector<std::string> names;
  for (const Flag& f : flags_) names.push_back(f.name);
  return names;
}

}  // namespace roced::util
