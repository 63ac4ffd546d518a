// Minimal leveled logging to stderr (journald adds timestamps under systemd;
// a terminal gets them from us). Thread-safe: each line is written with one
// write(2). Abseil 20220623 has no absl/log, hence this.
#pragma once

#include <sstream>
#include <string>

#include "absl/strings/string_view.h"

namespace roced::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLevel(Level level);
Level GetLevel();
// Parses "debug", "info", "warning"/"warn", "error". False when unknown.
bool ParseLevel(absl::string_view text, Level* level);

class Line {
 public:
  Line(Level level, const char* file, int line);
  ~Line();
  Line(const Line&) = delete;
  Line& operator=(const Line&) = delete;
  template <typename T>
  Line& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  Level level_;
  std::ostringstream stream_;
};

}  // namespace roced::log

#define ROCED_LOG(severity)                                                  \
  if (::roced::log::Level::k##severity < ::roced::log::GetLevel()) {         \
  } else                                                                     \
    ::roced::log::Line(::roced::log::Level::k##severity, __FILE__, __LINE__)

#define LOG_DEBUG ROCED_LOG(Debug)
#define LOG_INFO ROCED_LOG(Info)
#define LOG_WARNING ROCED_LOG(Warning)
#define LOG_ERROR ROCED_LOG(Error)
