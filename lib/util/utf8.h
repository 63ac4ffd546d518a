// UTF-8 well-formedness, as proto3 requires of every `string` field (a
// message holding other bytes there fails to serialize and to parse on the
// other end of an RPC).
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace roced::util {

// True when `text` is well-formed UTF-8 (RFC 3629): no stray continuation
// bytes, truncated sequences, overlong forms, surrogates (U+D800-U+DFFF) or
// code points above U+10FFFF.
inline bool IsValidUtf8(absl::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    uint32_t min = 0;
    if ((c & 0xe0) == 0xc0) {
      len = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return false;  // a continuation byte, or 0xf8-0xff
    }
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

}  // namespace roced::util
