// HTTP basic authentication for the metrics endpoint against bcrypt hashes
// (basic_auth_users of the web config).
//
// bcrypt is slow on purpose (50-300 ms at cost 10-12), and Prometheus sends
// the same credentials with every scrape, so a successful check is
// remembered: the user and the SHA-256 of the password, at most
// kAuthCacheEntries of them, the least recently used dropped first. A
// failed check is never remembered; what wrong passwords can cost is bounded
// by a gate of its own: at most kMaxBcryptRuns bcrypt runs at a time,
// whatever the number of clients and of civetweb's worker threads (a check
// past it waits for a run to end). A remembered success needs no run.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>

namespace roced::agent {

inline constexpr std::size_t kAuthCacheEntries = 64;
inline constexpr int kMaxBcryptRuns = 2;

class BasicAuth {
 public:
  // `users`: user name -> bcrypt hash ($2a$, $2b$, $2y$), as parsed by
  // ParseWebConfig.
  explicit BasicAuth(std::map<std::string, std::string> users);

  // Whether the password is the user's. Thread-safe; called by civetweb's
  // worker threads. An unknown user costs a bcrypt run too, so timing does
  // not tell which users exist.
  bool Check(const std::string& user, const std::string& password);

  // bcrypt runs so far (tests: the cache spares them).
  std::uint64_t hash_runs() const;

 private:
  using Digest = std::array<unsigned char, 32>;
  struct Entry {
    std::string user;
    Digest digest;
  };
  bool CachedLocked(const std::string& user, const Digest& digest);
  void RememberLocked(const std::string& user, const Digest& digest);
  // BcryptMatches, once fewer than kMaxBcryptRuns runs are under way.
  bool GatedBcrypt(const std::string& hash, const std::string& password);

  const std::map<std::string, std::string> users_;
  mutable std::mutex mu_;  // guards cache_ and hash_runs_; not held during bcrypt
  std::list<Entry> cache_;  // most recently used first
  std::uint64_t hash_runs_ = 0;
  std::mutex gate_mu_;  // guards running_
  std::condition_variable gate_cv_;
  int running_ = 0;
};

// crypt(3) of `password` with the salt and cost of `hash`, compared in
// constant time. False for a hash crypt does not take.
bool BcryptMatches(const std::string& hash, const std::string& password);

}  // namespace roced::agent
