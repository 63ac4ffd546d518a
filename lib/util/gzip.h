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
  explicit GzipEncoder(int level);
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
