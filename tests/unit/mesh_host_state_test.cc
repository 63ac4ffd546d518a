// A host's own state over the mesh window: each reason for calling it busy
// (CPU pressure, a stalled mesh loop, an agent younger than the window)
// stated with its figures, none when all is well or the pressure is not
// known; the loop's largest lag kept over the window and gone with it.
#include "mesh/host_state.h"

#include <gtest/gtest.h>

namespace roced::mesh {
namespace {

constexpr int64_t kS = 1000 * 1000 * 1000;

HostState Fine() {
  return HostState{.cpu_pressure = 3.5,
                   .max_loop_lag = absl::Milliseconds(40),
                   .uptime = absl::Hours(2),
                   .window = absl::Seconds(60)};
}

TEST(HostState, AWellHostHasNoReason) {
  EXPECT_EQ(HostBusyReason(Fine()), "");
  HostState unknown = Fine();
  unknown.cpu_pressure.reset();  // a kernel without PSI
  EXPECT_EQ(HostBusyReason(unknown), "");
}

TEST(HostState, EachReasonIsStatedWithItsFigures) {
  HostState s = Fine();
  s.cpu_pressure = 73.2;
  EXPECT_EQ(HostBusyReason(s), "CPU pressure 73% (some avg10)");
  s.cpu_pressure = 40;  // the threshold itself is busy
  EXPECT_EQ(HostBusyReason(s), "CPU pressure 40% (some avg10)");
  s.cpu_pressure = 39.9;
  EXPECT_EQ(HostBusyReason(s), "");

  s = Fine();
  s.max_loop_lag = absl::Milliseconds(4200);
  EXPECT_EQ(HostBusyReason(s), "mesh loop stalled 4.2 s");
  s.max_loop_lag = absl::Milliseconds(999);
  EXPECT_EQ(HostBusyReason(s), "");

  s = Fine();
  s.uptime = absl::Seconds(12);
  EXPECT_EQ(HostBusyReason(s), "agent started 12 s ago, within the 60 s window");
  s.uptime = absl::Seconds(60);
  EXPECT_EQ(HostBusyReason(s), "");
}

TEST(HostState, SeveralReasonsAreJoined) {
  const HostState s{.cpu_pressure = 95, .max_loop_lag = absl::Seconds(2), .uptime = absl::Seconds(5),
                    .window = absl::Seconds(20)};
  EXPECT_EQ(HostBusyReason(s),
            "CPU pressure 95% (some avg10); mesh loop stalled 2.0 s; agent started 5 s ago, within the 20 s window");
}

TEST(WindowMax, KeepsTheLargestOverTheWindowAndDropsItWithItsSlot) {
  WindowMax lag(absl::Seconds(60), 6);  // slots of 10 s
  EXPECT_EQ(lag.Max(0), absl::ZeroDuration());
  lag.Record(5 * kS, absl::Seconds(3));
  lag.Record(15 * kS, absl::Milliseconds(10));
  lag.Record(16 * kS, absl::Milliseconds(30));
  EXPECT_EQ(lag.Max(59 * kS), absl::Seconds(3));
  // At 60 s the window is [10, 70): the 3 s stall left it.
  EXPECT_EQ(lag.Max(60 * kS), absl::Milliseconds(30));
  // The ring comes round: the slot of 15 s is reused at 75 s.
  lag.Record(75 * kS, absl::Milliseconds(1));
  EXPECT_EQ(lag.Max(79 * kS), absl::Milliseconds(1));
  EXPECT_EQ(lag.Max(200 * kS), absl::ZeroDuration());
}

}  // namespace
}  // namespace roced::mesh
