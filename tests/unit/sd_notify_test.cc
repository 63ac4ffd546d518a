// util::SdNotify and SdWatchdogUsec against real sockets and the
// environment systemd sets (the e2e test runs the whole agent this way).
#include "util/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace roced::util {
namespace {

// A datagram socket bound to `name` (a path, or "@x" for the abstract
// namespace), as systemd's notify socket is.
int Bind(const std::string& name) {
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  if (name[0] == '@') addr.sun_path[0] = '\0';
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

std::string Receive(int fd) {
  char buf[256];
  ssize_t n = recv(fd, buf, sizeof(buf), 0);
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

TEST(SdNotify, SendsToAPathSocketAndAnAbstractOne) {
  const std::string path = absl::StrCat("/tmp/roced-notify-", getpid());
  unlink(path.c_str());
  int fd = Bind(path);
  ASSERT_GE(fd, 0);
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  EXPECT_TRUE(SdNotify("READY=1\nSTATUS=serving"));
  EXPECT_EQ(Receive(fd), "READY=1\nSTATUS=serving");
  close(fd);
  unlink(path.c_str());

  const std::string abstract = absl::StrCat("@roced-notify-", getpid());
  fd = Bind(abstract);
  ASSERT_GE(fd, 0);
  setenv("NOTIFY_SOCKET", abstract.c_str(), 1);
  EXPECT_TRUE(SdNotify("WATCHDOG=1"));
  EXPECT_EQ(Receive(fd), "WATCHDOG=1");
  close(fd);

  unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(SdNotify("READY=1"));  // no service manager: nothing sent
  setenv("NOTIFY_SOCKET", "relative/path", 1);
  EXPECT_FALSE(SdNotify("READY=1"));
  unsetenv("NOTIFY_SOCKET");
}

TEST(SdWatchdogUsec, ReadsTheIntervalForThisProcessOnly) {
  unsetenv("WATCHDOG_PID");
  unsetenv("WATCHDOG_USEC");
  EXPECT_EQ(SdWatchdogUsec(), std::nullopt);
  setenv("WATCHDOG_USEC", "600000", 1);
  EXPECT_EQ(SdWatchdogUsec(), 600000u);
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  EXPECT_EQ(SdWatchdogUsec(), 600000u);
  setenv("WATCHDOG_PID", std::to_string(getpid() + 1).c_str(), 1);
  EXPECT_EQ(SdWatchdogUsec(), std::nullopt);  // meant for another process
  unsetenv("WATCHDOG_PID");
  setenv("WATCHDOG_USEC", "0", 1);
  EXPECT_EQ(SdWatchdogUsec(), std::nullopt);
  setenv("WATCHDOG_USEC", "soon", 1);
  EXPECT_EQ(SdWatchdogUsec(), std::nullopt);
  unsetenv("WATCHDOG_USEC");
}

}  // namespace
}  // namespace roced::util
