#include "util/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "absl/strings/ascii.h"

namespace roced::log {
namespace {
std::atomic<int> g_level{static_cast<int>(Level::kInfo)};

const char* LevelName(Level level) {
  switch (level) {
    case Level::kDebug: return "DEBUG";
    case Level::kInfo: return "INFO";
    case Level::kWarning: return "WARN";
    case Level::kError: return "ERROR";
  }
  return "?";
}
}  // namespace

void SetLevel(Level level) { g_level.store(static_cast<int>(level)); }
Level GetLevel() { return static_cast<Level>(g_level.load()); }

bool ParseLevel(absl::string_view text, Level* level) {
  std::string t = absl::AsciiStrToLower(text);
  if (t == "debug") *level = Level::kDebug;
  else if (t == "info") *level = Level::kInfo;
  else if (t == "warning" || t == "warn") *level = Level::kWarning;
  else if (t == "error") *level = Level::kError;
  else return false;
  return true;
}

Line::Line(Level level, const char* file, int line) : level_(level) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[32];
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
  const char* base = std::strrchr(file, '/');
  char millis[24];
  snprintf(millis, sizeof(millis), ".%03ldZ ", ts.tv_nsec / 1000000);
  stream_ << when << millis
          << LevelName(level_) << ' ' << (base ? base + 1 : file) << ':' << line << "] ";
}

Line::~Line() {
  stream_ << '\n';
  std::string s = stream_.str();
  // One write so concurrent lines do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, s.data(), s.size());
  (void)ignored;
}

}  // namespace roced::log
