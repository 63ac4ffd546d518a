// systemd's notification protocol (sd_notify(3)), without libsystemd: a
// datagram of "KEY=VALUE" lines to the unix socket named by $NOTIFY_SOCKET
// (a path, or "@name" for the abstract namespace), and the watchdog interval
// from $WATCHDOG_USEC (for this process when $WATCHDOG_PID is set). Linking
// libsystemd for these two calls would map it and the five libraries it
// pulls in (libgcrypt, liblz4, libzstd, ...) into the agent: ~1 MiB of PSS.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace roced::util {

// Sends `state` ("READY=1", "WATCHDOG=1", "STATUS=...") to the service
// manager. False when there is none ($NOTIFY_SOCKET unset) or the send
// failed; nothing to do about either but go on.
bool SdNotify(std::string_view state);

// The watchdog interval systemd expects pings within, when it watches this
// process (WatchdogSec= in the unit); nullopt otherwise.
std::optional<uint64_t> SdWatchdogUsec();

}  // namespace roced::util
