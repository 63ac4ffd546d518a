#include "util/http_get.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "util/tcp.h"

namespace roced::util {
namespace {

absl::StatusOr<HttpResponse> ParseResponse(const std::string& raw, const std::string& where) {
  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos || !absl::StartsWith(raw, "HTTP/1.")) {
    return absl::DataLossError(absl::StrCat(where, ": the answer is not HTTP"));
  }
  HttpResponse out;
  std::vector<std::string> lines = absl::StrSplit(raw.substr(0, end), "\r\n");
  std::vector<std::string> status = absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
  if (status.size() < 2 || !absl::SimpleAtoi(status[1], &out.status)) {
    return absl::DataLossError(absl::StrCat(where, ": bad status line: ", lines[0].substr(0, 80)));
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    std::pair<std::string, std::string> kv = absl::StrSplit(lines[i], absl::MaxSplits(':', 1));
    if (absl::AsciiStrToLower(kv.first) == "content-type") out.content_type = std::string(absl::StripAsciiWhitespace(kv.second));
  }
  out.body = raw.substr(end + 4);
  return out;
}

}  // namespace

absl::StatusOr<HttpUrl> ParseHttpUrl(const std::string& flag, const std::string& text) {
  if (absl::StartsWith(text, "https://")) {
    return absl::UnimplementedError(absl::StrCat(
        flag, ": https is not supported; give a plain http:// address (e.g. a port-forward to the server)"));
  }
  if (!absl::StartsWith(text, "http://")) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": \"", text, "\" is not http://HOST[:PORT][/PATH]"));
  }
  std::string rest = text.substr(7);
  HttpUrl url;
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    url.base_path = rest.substr(slash);
    rest.resize(slash);
    while (!url.base_path.empty() && url.base_path.back() == '/') url.base_path.pop_back();
  }
  std::string port;
  if (absl::StartsWith(rest, "[")) {  // [v6]:port
    const size_t close = rest.find(']');
    if (close == std::string::npos) return absl::InvalidArgumentError(absl::StrCat(flag, ": unclosed [ in \"", text, "\""));
    url.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return absl::InvalidArgumentError(absl::StrCat(flag, ": bad port in \"", text, "\""));
      port = rest.substr(close + 2);
    }
  } else {
    const size_t colon = rest.rfind(':');
    url.host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
  }
  uint32_t p = 80;
  if (!port.empty() && (!absl::SimpleAtoi(port, &p) || p == 0 || p > 65535)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": port \"", port, "\" is not in 1-65535"));
  }
  if (url.host.empty() || url.host.size() > 253) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": \"", text, "\" has no host (or one over 253 bytes)"));
  }
  url.port = static_cast<uint16_t>(p);
  return url;
}

std::string UrlEncode(const std::string& value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

absl::StatusOr<HttpResponse> HttpGet(const HttpUrl& url, const std::string& path_and_query, absl::Duration timeout,
                                     size_t max_bytes) {
  const absl::Time deadline = absl::Now() + timeout;
  const std::string where = absl::StrCat(url.host, ":", url.port);
  absl::StatusOr<UniqueFd> fd = ConnectTcp(url.host, url.port, deadline);
  if (!fd.ok()) return fd.status();
  const bool v6 = url.host.find(':') != std::string::npos;
  const std::string request =
      absl::StrCat("GET ", url.base_path, path_and_query, " HTTP/1.0\r\nHost: ", v6 ? "[" : "", url.host,
                   v6 ? "]" : "", ":", url.port, "\r\nAccept: application/json\r\nUser-Agent: rocectl\r\n\r\n");
  for (size_t sent = 0; sent < request.size();) {
    if (absl::Status s = AwaitFd(fd->get(), POLLOUT, deadline, where); !s.ok()) return s;
    const ssize_t n = send(fd->get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat(where, ": send: ", strerror(errno)));
    }
    if (n > 0) sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buf[65536];
  while (true) {
    if (absl::Status s = AwaitFd(fd->get(), POLLIN, deadline, where); !s.ok()) return s;
    const ssize_t n = recv(fd->get(), buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat(where, ": recv: ", strerror(errno)));
    }
    raw.append(buf, static_cast<size_t>(n));
    if (raw.size() > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(where, ": the answer is over ", max_bytes, " bytes"));
    }
  }
  return ParseResponse(raw, where);
}

}  // namespace roced::util
