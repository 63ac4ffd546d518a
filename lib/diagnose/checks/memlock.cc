// The diagnose check `memlock`: RDMA registers pinned memory: a limited
// memlock fails memory registration.
#include "diagnose/check.h"

#include "absl/strings/str_cat.h"

namespace roced::diagnose {

namespace {

void Memlock(const Ctx& c) {
  if (!c.in.memlock_bytes) return;
  c.Add(roced::v1::SEVERITY_WARNING, "roced",
        absl::StrCat("RLIMIT_MEMLOCK is ", *c.in.memlock_bytes / 1024, " KiB, not unlimited"),
        "memory registration pins pages and counts against this limit; registrations beyond it fail with "
        "ENOMEM (probes here, and the same limit typically applies to RDMA applications started the same "
        "way)",
        "LimitMEMLOCK=infinity in the systemd unit (as shipped), `memlock unlimited` in limits.conf for "
        "RDMA applications");
}

}  // namespace

const Check kMemlockCheck = {{"memlock", "the agent's locked-memory limit",
                        "the agent's RLIMIT_MEMLOCK (memlock_bytes)",
                        "RDMA registers pinned memory: a limited memlock fails memory registration"},
                       Memlock, nullptr};

}  // namespace roced::diagnose
