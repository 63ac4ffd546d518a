// Listens to rtnetlink multicast groups (link, DCB and address changes) and
// to the kernel's uevents for RDMA devices (an rxe link added or a NIC
// driver bound: ib_core sends no rtnetlink message for those), and calls a
// callback when something changed, so discovery and reconcile react at once
// instead of waiting for their periodic pass, which can then be rare.
//
// The callback runs on the monitor's own thread; it must be quick (signal a
// condition, not do the work). Events arriving within `debounce` of each
// other are coalesced into one call, whose reason names every distinct
// kind of change the window held ("link change (newlink), address change"),
// so a link event does not hide an address or DCB change that came with it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

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

  // Opens the netlink socket, joins RTNLGRP_LINK, RTNLGRP_DCB and the IPv4
  // and IPv6 address groups (GIDs follow addresses), opens the uevent
  // socket (without it: a warning, and device arrivals wait for the
  // periodic pass), and starts the thread. UNAVAILABLE when rtnetlink
  // cannot be opened (the agent then relies on its periodic pass).
  absl::Status Start();
  void Stop();

  // Number of notifications received (for tests and metrics).
  uint64_t events() const { return events_.load(); }

 private:
  void Run();

  Callback callback_;
  absl::Duration debounce_;
  int fd_ = -1;
  int uevent_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<uint64_t> events_{0};
};

// What one recv() of the monitor's socket holds: how many netlink messages
// (each counts as an event), and the distinct reasons they give, in the
// order first seen ("dcb change", "address change", "link change
// (newlink)", "link change (dellink)"; at most those four, none when there
// are no messages). Pure over the bytes; a truncated message ends the walk.
struct LinkEvents {
  uint64_t messages = 0;
  std::vector<std::string> reasons;
};
LinkEvents ScanLinkEvents(const void* buf, size_t len);

// One kernel uevent ("ACTION@DEVPATH" then NUL-separated KEY=VALUE pairs):
// for a device of the infiniband or infiniband_verbs class, the reason to
// give ("RDMA device add (rxe0)"); nullopt for any other subsystem, and for
// bytes that are not a uevent (udev's own "libudev" messages included).
std::optional<std::string> ScanUevent(const char* buf, size_t len);

}  // namespace roced::hal
