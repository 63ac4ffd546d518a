// Caller-supplied text (RPC fields, config values, peer names) made safe to
// print on one log line or inside an error message: nothing a caller sends
// can start a new log line, move the terminal's cursor or make a line
// unbounded.
#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace roced::util {

// Control characters, DEL, bytes >= 0x80 and the backslash are written as
// \n, \r, \t, \\ or \xHH; printable ASCII stays as it is. Text beyond
// `max_bytes` input bytes is cut and "...(N more bytes)" appended.
inline std::string EscapeForLog(absl::string_view text, size_t max_bytes = 256) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const size_t shown = text.size() < max_bytes ? text.size() : max_bytes;
  out.reserve(shown + 2);
  for (size_t i = 0; i < shown; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\\': out += "\\\\"; continue;
      default: break;
    }
    if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (shown < text.size()) absl::StrAppend(&out, "...(", text.size() - shown, " more bytes)");
  return out;
}

// EscapeForLog in single quotes, for values quoted in messages ('eth0').
inline std::string Quoted(absl::string_view text, size_t max_bytes = 64) {
  return absl::StrCat("'", EscapeForLog(text, max_bytes), "'");
}

}  // namespace roced::util
