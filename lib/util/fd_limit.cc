#include "util/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>

namespace roced::util {

uint64_t SoftFdLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kMaxFdLimit;
  return limit.rlim_cur;
}

FdLimit RaiseFdLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return FdLimit{kMaxFdLimit, kMaxFdLimit, kMaxFdLimit};
  const rlim_t want = limit.rlim_max == RLIM_INFINITY ? kMaxFdLimit : std::min<rlim_t>(limit.rlim_max, kMaxFdLimit);
  FdLimit out{limit.rlim_cur, limit.rlim_cur, limit.rlim_max == RLIM_INFINITY ? kMaxFdLimit : limit.rlim_max};
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= want) return out;
  limit.rlim_cur = want;
  if (setrlimit(RLIMIT_NOFILE, &limit) == 0) out.soft = want;
  return out;
}

}  // namespace roced::util
