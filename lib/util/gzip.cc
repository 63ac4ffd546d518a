#include "util/gzip.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace roced::util {

GzipEncoder::GzipEncoder(int level, int window_bits, int mem_level) : level_(level) {
  // windowBits + 16: a gzip header and trailer instead of zlib's. (zlib
  // takes 8 as 9 for deflate; 9 is the least asked for here.)
  if (window_bits < 9 || window_bits > 15 || mem_level < 1 || mem_level > 9) return;
  ready_ = deflateInit2(&zs_, level, Z_DEFLATED, window_bits + 16, mem_level, Z_DEFAULT_STRATEGY) == Z_OK;
}

GzipEncoder::~GzipEncoder() {
  if (ready_) deflateEnd(&zs_);
}

absl::Status GzipEncoder::Compress(std::string_view in, std::string* out) {
  if (!ready_) return absl::InternalError("zlib: deflateInit2 failed");
  if (deflateReset(&zs_) != Z_OK) return absl::InternalError("zlib: deflateReset failed");
  zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs_.avail_in = static_cast<uInt>(in.size());
  // deflateBound (about the input's size) is enough for one call, but a
  // string resized to it has every page touched (zero-filled) on every
  // call, and kept by a caller that reuses `out`. Exposition text shrinks
  // 7x at level 1: start at an eighth of the input and double when full.
  const size_t bound = deflateBound(&zs_, in.size());
  out->resize(std::min(bound, std::max(kFirstOutputBytes, in.size() / 8)));
  while (true) {
    zs_.next_out = reinterpret_cast<Bytef*>(out->data()) + zs_.total_out;
    zs_.avail_out = static_cast<uInt>(out->size() - zs_.total_out);
    const int rc = deflate(&zs_, Z_FINISH);
    if (rc == Z_STREAM_END) break;
    if ((rc != Z_OK && rc != Z_BUF_ERROR) || out->size() >= bound) {
      out->clear();
      return absl::InternalError(absl::StrCat("zlib: deflate returned ", rc));
    }
    out->resize(std::min(bound, out->size() * 2));
  }
  out->resize(zs_.total_out);
  return absl::OkStatus();
}

bool AcceptsGzip(const char* accept_encoding) {
  if (accept_encoding == nullptr) return false;
  bool gzip_listed = false, gzip_ok = false, star_ok = false;
  for (absl::string_view item : absl::StrSplit(accept_encoding, ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(item, ';');
    absl::string_view coding = absl::StripAsciiWhitespace(parts[0]);
    double q = 1;
    for (size_t i = 1; i < parts.size(); ++i) {
      absl::string_view p = absl::StripAsciiWhitespace(parts[i]);
      if (absl::ConsumePrefix(&p, "q=") || absl::ConsumePrefix(&p, "Q=")) {
        if (!absl::SimpleAtod(p, &q)) q = 0;
      }
    }
    if (absl::EqualsIgnoreCase(coding, "gzip") || absl::EqualsIgnoreCase(coding, "x-gzip")) {
      gzip_listed = true;
      gzip_ok = q > 0;
    } else if (coding == "*") {
      star_ok = q > 0;
    }
  }
  return gzip_listed ? gzip_ok : star_ok;
}

}  // namespace roced::util
