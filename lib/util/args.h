// A small command-line parser shared by roced and rocectl: GNU-style long
// flags (--name=value, --name value), optional one-letter aliases (-o json),
// boolean flags, and help text rendered like a man page's OPTIONS section.
//
// Not thread-safe; use from main() only. Target pointers must outlive Parse().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace roced::util {

class ArgParser {
 public:
  // `value_name` is shown in help ("--config FILE"); `help` may be several
  // sentences and is wrapped.
  void AddString(const std::string& name, std::string* target, const std::string& value_name,
                 const std::string& help, char short_name = 0);
  void AddBool(const std::string& name, bool* target, const std::string& help,
               char short_name = 0);
  void AddUint(const std::string& name, uint64_t* target, const std::string& value_name,
               const std::string& help);
  void AddDuration(const std::string& name, absl::Duration* target, const std::string& value_name,
                   const std::string& help);

  // Parses argv[first..argc). Non-flag words go to `positional`. When
  // `stop_at_positional` is set, parsing stops at the first non-flag word and
  // it and everything after it go to `positional` unparsed (subcommands).
  // "--" ends flag parsing. Errors are INVALID_ARGUMENT naming the flag.
  absl::Status Parse(int argc, const char* const* argv, int first, bool stop_at_positional,
                     std::vector<std::string>* positional);

  // The OPTIONS block: one entry per flag with its default, wrapped at 80.
  std::string Help() const;

  // Names of every registered long flag (for tests cross-checking manifests).
  std::vector<std::string> FlagNames() const;

 private:
  enum class Kind { kString, kBool, kUint, kDuration };
  struct Flag {
    std::string name;
    char short_name;
    Kind kind;
    void* target;
    std::string value_name;
    std::string help;
    std::string default_text;
  };
  const Flag* Find(const std::string& name) const;
  const Flag* FindShort(char c) const;
  static absl::Status Set(const Flag& flag, const std::string& value);

  std::vector<Flag> flags_;
};

// Wraps `text` at `width` columns with every line prefixed by `indent`.
std::string WrapText(const std::string& text, size_t width, const std::string& indent);

}  // namespace roced::util
