#include "util/ip_subnet.h"

#include <arpa/inet.h>

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace roced::util {

namespace {

// The address bytes (IPv4 in the first 4) and whether it is IPv6.
std::optional<std::pair<std::array<uint8_t, 16>, bool>> ParseIp(const std::string& ip) {
  std::array<uint8_t, 16> bytes{};
  if (inet_pton(AF_INET, ip.c_str(), bytes.data()) == 1) return std::make_pair(bytes, false);
  if (inet_pton(AF_INET6, ip.c_str(), bytes.data()) == 1) return std::make_pair(bytes, true);
  return std::nullopt;
}

std::array<uint8_t, 16> Masked(std::array<uint8_t, 16> bytes, uint32_t prefix_len) {
  for (uint32_t i = 0; i < 16; ++i) {
    const uint32_t keep = prefix_len > 8 * i ? std::min<uint32_t>(8, prefix_len - 8 * i) : 0;
    bytes[i] &= static_cast<uint8_t>(keep == 0 ? 0 : 0xff << (8 - keep));
  }
  return bytes;
}

}  // namespace

std::optional<IpSubnet> SubnetOf(const std::string& ip, uint32_t prefix_len) {
  auto parsed = ParseIp(ip);
  if (!parsed || prefix_len > (parsed->second ? 128u : 32u)) return std::nullopt;
  IpSubnet s;
  s.ipv6 = parsed->second;
  s.prefix_len = prefix_len;
  s.network = Masked(parsed->first, prefix_len);
  return s;
}

bool IpSubnet::Contains(const std::string& ip) const {
  auto parsed = ParseIp(ip);
  return parsed && parsed->second == ipv6 && Masked(parsed->first, prefix_len) == network;
}

std::string IpSubnet::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(ipv6 ? AF_INET6 : AF_INET, network.data(), buf, sizeof(buf));
  return absl::StrCat(buf, "/", prefix_len);
}

bool IpSubnet::operator<(const IpSubnet& o) const {
  return std::tie(ipv6, network, prefix_len) < std::tie(o.ipv6, o.network, o.prefix_len);
}

bool IpSubnet::operator==(const IpSubnet& o) const {
  return ipv6 == o.ipv6 && prefix_len == o.prefix_len && network == o.network;
}

std::optional<std::string> IpOfHostPort(const std::string& host_port) {
  std::string host = host_port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) return std::nullopt;
    host = host.substr(1, close - 1);
  } else if (const size_t colon = host.rfind(':');
             colon != std::string::npos && host.find(':') == colon) {
    host = host.substr(0, colon);  // one colon: host:port (more: a bare IPv6)
  }
  if (!ParseIp(host)) return std::nullopt;
  return host;
}

bool IsHostPort(std::string_view s) {
  const size_t colon = s.rfind(':');
  if (colon == std::string_view::npos) return false;
  std::string_view host = s.substr(0, colon);
  const std::string_view port = s.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (host.find_first_of("[]") != std::string_view::npos) return false;
  } else if (host.find_first_of("[]:") != std::string_view::npos) {
    return false;  // an IPv6 host must be in brackets
  }
  if (host.empty() || port.empty() || port.size() > 5) return false;
  for (const char c : host) {
    if (c <= ' ' || c > '~') return false;  // printable ASCII only
  }
  uint32_t number = 0;
  for (const char c : port) {
    if (c < '0' || c > '9') return false;
    number = number * 10 + static_cast<uint32_t>(c - '0');
  }
  return number >= 1 && number <= 65535;
}

}  // namespace roced::util
