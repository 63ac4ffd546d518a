#include "tools/rocectl/counters_cmd.h"

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/call.h"

namespace roced::ctl {

void RegisterCountersFlags(CountersFlags* f, util::ArgParser* p) {
  p->AddBool("rate", &f->rate,
             "counters: read twice --interval apart and show per-second rates of the counters "
             "that moved.");
  p->AddBool("watch", &f->watch, "counters: redraw the table with rates every --interval.", 'w');
  p->AddBool("all", &f->all, "counters: with --rate or --watch, show counters that did not move too.");
  p->AddString("device", &f->device, "DEV", "counters: only this RDMA device (e.g. mlx5_0).");
  p->AddString("netdev", &f->netdev, "NETDEV", "counters: only this netdev (e.g. ens1f0).");
  p->AddDuration("interval", &f->interval, "DUR", "counters: time between readings.");
}

int RunCounters(const CommandContext& ctx, const CountersFlags& flags,
                const std::vector<std::string>& args) {
  if (!NoArguments("counters", args)) return kExitUsage;
  if (flags.interval <= absl::ZeroDuration()) {
    std::cerr << "rocectl: --interval must be positive\n";
    return kExitUsage;
  }
  roced::v1::GetCountersRequest request;
  request.set_device(flags.device);
  request.set_netdev(flags.netdev);
  auto read = [&](roced::v1::GetCountersResponse* response) {
    grpc::Status s = CallAgent(ctx.channel, ctx.timeout, &roced::v1::Agent::Stub::GetCounters, request, response);
    if (!s.ok()) FailRpc(ctx, s);
    return s.ok();
  };
  auto print = [&](const roced::v1::GetCountersResponse& r, bool rates) {
    Print(ctx.output, r, [&] { return CountersTable(r, rates, rates && !flags.all); });
    std::cout.flush();
  };

  roced::v1::GetCountersResponse response;
  if (!read(&response)) return kExitFailed;
  if (!flags.rate && !flags.watch) {
    print(response, false);
    return kExitOk;
  }
  // The agent computes rates against the previous GetCounters call it
  // answered; the first reading above is that call.
  const bool clear = flags.watch && ctx.output == Output::kTable && isatty(STDOUT_FILENO);
  do {
    std::this_thread::sleep_for(absl::ToChronoNanoseconds(flags.interval));
    if (!read(&response)) return kExitFailed;
    if (clear) std::cout << "\033[H\033[2J";
    if (flags.watch && ctx.output == Output::kTable) {
      std::cout << "Every " << absl::FormatDuration(flags.interval) << " from " << ctx.where
                << " (Ctrl-C to stop)\n\n";
    }
    print(response, true);
  } while (flags.watch);
  return kExitOk;
}

CommandRun BindCounters(util::ArgParser* parser) {
  auto flags = std::make_shared<CountersFlags>();
  RegisterCountersFlags(flags.get(), parser);
  return [flags](const CommandContext& ctx, const std::vector<std::string>& args) {
    return RunCounters(ctx, *flags, args);
  };
}

}  // namespace roced::ctl
