// Every address a DNS name resolves to, as gRPC host:port targets: the fleet
// mesh's DNS membership (a Kubernetes headless Service over the DaemonSet
// resolves to every agent), in the agent and in `rocectl mesh --dns`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace roced::util {

// At most this many addresses are kept (the mesh's member bound).
inline constexpr size_t kMaxResolvedAddresses = 100000;

// "a.b.c.d:PORT" and "[v6]:PORT", sorted, without repeats (getaddrinfo).
// UNAVAILABLE naming the name and the resolver's error.
absl::StatusOr<std::vector<std::string>> ResolveAll(const std::string& name, uint16_t port);

// "NAME:PORT" -> (NAME, PORT); INVALID_ARGUMENT naming `flag`, the value
// and what is allowed (a name of at most 253 bytes, a port 1..65535).
absl::StatusOr<std::pair<std::string, uint16_t>> ParseNamePort(const std::string& flag, const std::string& text);

}  // namespace roced::util
