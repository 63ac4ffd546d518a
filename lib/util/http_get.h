// A plain-HTTP GET for rocectl's reads of other services' HTTP APIs (today
// a Prometheus server's, `rocectl mesh --prometheus`): one request, HTTP/1.0
// so the answer comes whole (no chunked encoding) and the server closes
// the connection after it. No TLS: an https:// URL is refused with a
// message saying so.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace roced::util {

struct HttpUrl {
  std::string host;       // a name, an IPv4 address, or an IPv6 one without brackets
  uint16_t port = 80;
  std::string base_path;  // "" or "/prefix" (no trailing slash)
};

// "http://HOST[:PORT][/PATH]". INVALID_ARGUMENT naming `flag` for anything
// else (UNIMPLEMENTED for https://).
absl::StatusOr<HttpUrl> ParseHttpUrl(const std::string& flag, const std::string& text);

// Percent-encoding of a query-string value (RFC 3986 unreserved kept).
std::string UrlEncode(const std::string& value);

struct HttpResponse {
  int status = 0;
  std::string content_type;
  std::string body;
};

// GET `path_and_query` (starting with '/') from `url`'s host, within
// `timeout` for the whole exchange. UNAVAILABLE when it cannot connect or
// the connection breaks, DEADLINE_EXCEEDED past the timeout,
// RESOURCE_EXHAUSTED for an answer over `max_bytes`, DATA_LOSS for one
// that is not HTTP. Any HTTP status is returned as it is.
absl::StatusOr<HttpResponse> HttpGet(const HttpUrl& url, const std::string& path_and_query, absl::Duration timeout,
                                     size_t max_bytes);

}  // namespace roced::util
