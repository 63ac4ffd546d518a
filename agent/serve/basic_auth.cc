#include "agent/serve/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cstring>
#include <memory>
#include <utility>

namespace roced::agent {
namespace {

// Checked against when the user is unknown, so that costs what a known
// user's check costs (cost 10, the usual htpasswd -B cost).
constexpr char kDummyHash[] = "$2b$10$ppZW0YI5vC0E4iSXxJRm1OXT.3GRni5zsxzFwr9RQKK5/PP/xMzce";

}  // namespace

bool BcryptMatches(const std::string& hash, const std::string& password) {
  // struct crypt_data is ~32 KiB: on the heap, not a worker thread's stack.
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* out = crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  // crypt_rn returns NULL or a string starting with '*' on failure.
  if (out == nullptr || out[0] == '*' || std::strlen(out) != hash.size()) return false;
  return CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

bool BasicAuth::Check(const std::string& user, const std::string& password) {
  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(password.data()), password.size(), digest.data());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (CachedLocked(user, digest)) return true;
    ++hash_runs_;
  }
  auto it = users_.find(user);
  // A NUL would end the passphrase early for crypt: such a password is not
  // the one hashed.
  const bool nul = password.find('\0') != std::string::npos;
  if (it == users_.end() || nul) {
    GatedBcrypt(kDummyHash, password.substr(0, password.find('\0')));
    return false;
  }
  if (!GatedBcrypt(it->second, password)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  RememberLocked(user, digest);
  return true;
}

bool BasicAuth::GatedBcrypt(const std::string& hash, const std::string& password) {
  {
    std::unique_lock<std::mutex> lock(gate_mu_);
    gate_cv_.wait(lock, [this] { return running_ < kMaxBcryptRuns; });
    ++running_;
  }
  const bool match = BcryptMatches(hash, password);
  {
    std::lock_guard<std::mutex> lock(gate_mu_);
    --running_;
  }
  gate_cv_.notify_one();
  return match;
}

bool BasicAuth::CachedLocked(const std::string& user, const Digest& digest) {
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->user != user) continue;
    if (CRYPTO_memcmp(it->digest.data(), digest.data(), digest.size()) != 0) return false;
    cache_.splice(cache_.begin(), cache_, it);
    return true;
  }
  return false;
}

void BasicAuth::RememberLocked(const std::string& user, const Digest& digest) {
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->user == user) {
      cache_.erase(it);
      break;
    }
  }
  cache_.push_front({user, digest});
  if (cache_.size() > kAuthCacheEntries) cache_.pop_back();
}

std::uint64_t BasicAuth::hash_runs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hash_runs_;
}

}  // namespace roced::agent
