// Listens to rtnetlink multicast groups (link changes, DCB changes) and
// calls a callback when something changed, so discovery and reconcile react
// at once instead of waiting for their periodic pass.
//
// The callback runs on the monitor's own thread; it must be quick (signal a
// condition, not do the work). Events arriving within `debounce` of each
// other are coalesced into one call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace roced::hal {

class LinkMonitor {
 public:
  using Callback = std::function<void(const std::string& reason)>;

  LinkMonitor(Callback callback, absl::Duration debounce = absl::Milliseconds(20));
  ~LinkMonitor();
  LinkMonitor(const LinkMonitor&) = delete;
  LinkMonitor& operator=(const LinkMonitor&) = delete;

  // Opens the netlink socket, joins RTNLGRP_LINK and RTNLGRP_DCB, and starts
  // the thread. UNAVAILABLE when netlink cannot be opened (the agent then
  // relies on its periodic pass).
  absl::Status Start();
  void Stop();

  // Number of notifications received (for tests and metrics).
  uint64_t events() const { return events_.load(); }

 private:
  void Run();

  Callback callback_;
  absl::Duration debounce_;
  int fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<uint64_t> events_{0};
};

// What one recv() of the monitor's socket holds: how many netlink messages
// (each counts as an event), and the first one's reason for the callback
// ("dcb change", "link change (newlink)", "link change (dellink)"; empty
// when there are none). Pure over the bytes; a truncated message ends the
// walk.
struct LinkEvents {
  uint64_t messages = 0;
  std::string first_reason;
};
LinkEvents ScanLinkEvents(const void* buf, size_t len);

}  // namespace roced::hal
