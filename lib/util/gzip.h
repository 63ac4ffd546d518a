// gzip (RFC 1952) compression of a whole buffer with zlib, for HTTP
// responses. One GzipEncoder keeps its deflate state between calls (reset,
// not re-allocated: deflateInit2 allocates about 256 KiB each time) and is
// used by one thread at a time.
#pragma once

#include <zlib.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace roced::util {

class GzipEncoder {
 public:
  // `level`: zlib's 1 (fastest) to 9 (smallest); Z_DEFAULT_COMPRESSION is 6.
  // `window_bits` (9-15) and `mem_level` (1-9) size the deflate state:
  // 2^(window_bits+2) + 2^(mem_level+9) bytes, 256 KiB at zlib's (15, 8),
  // 48 KiB at the defaults here (12, 6), which every page of it touches on
  // every call and each encoding thread keeps. On exposition text of 430 KB
  // at level 1 (16 devices x 2 ports x 60 counters) a 4 KiB window gives 1%
  // more bytes than zlib's 32 KiB; 2 KiB, 32% more. Out of range: every
  // call fails.
  explicit GzipEncoder(int level, int window_bits = 12, int mem_level = 6);
  ~GzipEncoder();
  GzipEncoder(const GzipEncoder&) = delete;
  GzipEncoder& operator=(const GzipEncoder&) = delete;

  // Replaces *out with `in` compressed as one gzip member, growing *out as
  // the output needs (not to zlib's worst case). INTERNAL when zlib fails
  // (out of memory).
  absl::Status Compress(std::string_view in, std::string* out);

  int level() const { return level_; }

 private:
  static constexpr size_t kFirstOutputBytes = 16 * 1024;
  const int level_;
  z_stream zs_{};
  bool ready_ = false;
};

// Whether an Accept-Encoding header value admits gzip: a "gzip" (or "*")
// coding whose q-value is not 0, as RFC 9110 12.5.3 reads it. Null or empty:
// no.
bool AcceptsGzip(const char* accept_encoding);

}  // namespace roced::util
