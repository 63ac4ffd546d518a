// Names the calling thread (what top -H, ps -L, /proc/PID/task/TID/comm and
// perf show), cut to the kernel's 15 characters. Every thread the agent
// starts is named "roced-<job>", so per-thread CPU says which job costs it.
#pragma once

#include <pthread.h>

#include <string>

namespace roced::util {

inline void NameThisThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace roced::util
