// `rocectl counters [--rate] [--watch] [--device D] [--netdev N]`: the
// agent's RDMA, ethtool PFC/pause and discard counters with per-second
// rates, what on-call otherwise gets by diffing `ethtool -S` by hand.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "roced/v1/agent.pb.h"
#include "tools/rocectl/commands.h"
#include "util/args.h"

namespace roced::ctl {

struct CountersFlags {
  bool rate = false;
  bool watch = false;
  bool all = false;
  std::string device;
  std::string netdev;
  absl::Duration interval = absl::Seconds(1);
};
void RegisterCountersFlags(CountersFlags* flags, util::ArgParser* parser);

// Without --rate or --watch: one reading, every counter. With --rate: two
// readings `interval` apart, the counters that moved (all with --all) and
// their rates. --watch: a new table with rates every `interval` until
// interrupted.
int RunCounters(const CommandContext& ctx, const CountersFlags& flags,
                const std::vector<std::string>& args);

// The table (exposed for tests). `with_rates` adds the RATE/s column;
// `moving_only` drops counters whose rate is zero or unknown.
std::string CountersTable(const roced::v1::GetCountersResponse& response, bool with_rates,
                          bool moving_only);

}  // namespace roced::ctl
