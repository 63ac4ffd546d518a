#include "util/resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace roced::util {

absl::StatusOr<std::vector<std::string>> ResolveAll(const std::string& name, uint16_t port) {
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (int rc = getaddrinfo(name.c_str(), nullptr, &hints, &result); rc != 0) {
    return absl::UnavailableError(absl::StrCat("DNS ", name, ": ", gai_strerror(rc)));
  }
  std::set<std::string> out;
  for (addrinfo* a = result; a != nullptr && out.size() < kMaxResolvedAddresses; a = a->ai_next) {
    char host[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, host, sizeof(host));
      out.insert(absl::StrCat(host, ":", port));
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, host, sizeof(host));
      out.insert(absl::StrCat("[", host, "]:", port));
    }
  }
  freeaddrinfo(result);
  return std::vector<std::string>(out.begin(), out.end());
}

absl::StatusOr<std::pair<std::string, uint16_t>> ParseNamePort(const std::string& flag, const std::string& text) {
  const size_t colon = text.rfind(':');
  uint32_t port = 0;
  if (colon == std::string::npos || colon == 0 || !absl::SimpleAtoi(text.substr(colon + 1), &port) || port == 0 ||
      port > 65535 || colon > 253) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": \"", text,
                                                   "\" is not NAME:PORT (a DNS name of at most 253 bytes, "
                                                   "a port 1..65535)"));
  }
  return std::make_pair(text.substr(0, colon), static_cast<uint16_t>(port));
}

}  // namespace roced::util
