// IP subnets from an address and a prefix length, for deciding which
// addresses share a link. Pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace roced::util {

struct IpSubnet {
  bool ipv6 = false;
  uint32_t prefix_len = 0;
  std::array<uint8_t, 16> network{};  // host bits cleared; IPv4 in the first 4 bytes

  bool Contains(const std::string& ip) const;
  // "10.0.0.0/24", "fd00::/64".
  std::string ToString() const;
  bool operator<(const IpSubnet& o) const;
  bool operator==(const IpSubnet& o) const;
};

// The subnet `ip`/`prefix_len` lies in; nullopt for a malformed address or
// a prefix beyond 32 (IPv4) or 128 (IPv6).
std::optional<IpSubnet> SubnetOf(const std::string& ip, uint32_t prefix_len);

// The address part of "host:port" or "[v6]:port" when it is an IP literal;
// nullopt for a host name.
std::optional<std::string> IpOfHostPort(const std::string& host_port);

// Whether `s` is host:port as roced's gRPC addresses are written: a host
// name or IPv4 address of printable ASCII without ':', '[' or ']', or an IPv6 address in
// brackets ("[fd00::2]:7471"); then ':' and a port of 1-5 decimal digits in
// [1, 65535] (no sign, no spaces). The one check for config peers, RunProbe
// targets and inventory files.
bool IsHostPort(std::string_view s);

}  // namespace roced::util
