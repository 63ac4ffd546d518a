#include "tools/rocectl/probe_cmd.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "model/probe_limits.h"
#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/call.h"

namespace roced::ctl {

namespace {

// Shows "probing PEER ... Ns" on stderr while a long call runs, when stderr
// is a terminal; the line is erased when the call returns.
class Progress {
 public:
  Progress(std::string what, bool enabled) : what_(std::move(what)) {
    if (!enabled) return;
    thread_ = std::thread([this] { Run(); });
  }
  ~Progress() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    int seconds = 0;
    bool printed = false;
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) {
      ++seconds;
      std::cerr << "\r" << what_ << " ... " << seconds << "s" << std::flush;
      printed = true;
    }
    if (printed) std::cerr << "\r\033[K" << std::flush;
  }

  const std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

void RegisterProbeFlags(const std::string& command, ProbeFlags* f, util::ArgParser* p) {
  if (command == "probe") {
    p->AddString("kind", &f->kind, "KIND",
                 "probe: latency (like ib_write_lat, the default) or bandwidth (like ib_write_bw). "
                 "Latency is an RDMA WRITE ping-pong, bandwidth streams RDMA WRITEs.");
    p->AddUint("size", &f->size, "BYTES",
               "probe: message size (default: the agent's probes config; 2 for latency, 65536 "
               "for bandwidth).");
    p->AddUint("iterations", &f->iterations, "N",
               "probe: latency ping-pongs (default: the agent's probes config, else 1000); "
               "for bandwidth, write exactly N messages (like ib_write_bw -n) instead of "
               "streaming for --duration, which then only bounds the run.");
    p->AddDuration("duration", &f->duration, "DUR",
                   "probe: how long a bandwidth probe streams (100ms to 30s; default 2s).");
    p->AddBool("busy-poll", &f->busy_poll,
               "probe: both ends poll without yielding or sleeping, as perftest does (a core "
               "each for the run); by default they spin 2 ms, then yield, then sleep.");
    p->AddUint("qps", &f->qps, "N", "probe: queue pairs for a bandwidth probe (1-16).");
    p->AddString("tclass", &f->tclass, "TOS",
                 absl::StrCat("probe: traffic class, the ToS byte 0-", model::probe_limits::kMaxTrafficClass,
                              ". Default: probes.traffic_class, else the interface's roce.default_tos, else 0."));
  } else {
    p->AddString("kind", &f->kind, "KIND", "probes: only latency or bandwidth results.");
    p->AddUint("limit", &f->limit, "N", "probes: at most N results, newest first (0: all kept).");
  }
}

int RunProbeCommand(const CommandContext& ctx, const ProbeFlags& flags,
                    const std::vector<std::string>& args) {
  if (args.size() != 1) {
    std::cerr << "rocectl: usage: rocectl probe PEER [--kind latency|bandwidth] [--size B] "
                 "[--iterations N] [--duration D] [--qps N] [--tclass TOS] [--busy-poll]\n";
    return kExitUsage;
  }
  auto kind = ParseProbeKind(flags.kind, roced::v1::PROBE_KIND_LATENCY);
  if (!kind.ok()) {
    std::cerr << "rocectl: " << kind.status().message() << "\n";
    return kExitUsage;
  }
  roced::v1::RunProbeRequest request;
  request.set_peer(args[0]);
  request.set_kind(*kind);
  if (flags.size > 0) request.set_size(static_cast<uint32_t>(std::min<uint64_t>(flags.size, UINT32_MAX)));
  if (flags.iterations > 0) {
    request.set_iterations(static_cast<uint32_t>(std::min<uint64_t>(flags.iterations, UINT32_MAX)));
  }
  if (flags.qps > 0) request.set_qps(static_cast<uint32_t>(std::min<uint64_t>(flags.qps, UINT32_MAX)));
  if (flags.duration > absl::ZeroDuration()) {
    const int64_t ns = absl::ToInt64Nanoseconds(flags.duration);
    request.mutable_duration()->set_seconds(ns / 1000000000);
    request.mutable_duration()->set_nanos(static_cast<int32_t>(ns % 1000000000));
  }
  request.set_busy_poll(flags.busy_poll);
  if (!flags.tclass.empty()) {
    uint32_t tc = 0;
    if (!absl::SimpleAtoi(flags.tclass, &tc) || tc > model::probe_limits::kMaxTrafficClass) {
      std::cerr << "rocectl: --tclass: '" << flags.tclass << "' is not a ToS byte (0-"
                << model::probe_limits::kMaxTrafficClass << ")\n";
      return kExitUsage;
    }
    request.set_traffic_class(tc);
  }
  // The agent bounds a latency run at two minutes and a bandwidth run at
  // three times its duration (streaming, then draining; without --duration
  // the longest a config may give) plus a stall timeout; the call may take
  // that long on top of the usual deadline.
  const absl::Duration run_bound =
      *kind == roced::v1::PROBE_KIND_LATENCY
          ? absl::Seconds(150)
          : 3 * (flags.duration > absl::ZeroDuration() ? flags.duration : model::probe_limits::kMaxDuration) +
                absl::Seconds(20);
  roced::v1::ProbeResult result;
  grpc::Status status;
  {
    Progress progress(absl::StrCat("probing ", args[0], " (", ProbeKindText(*kind), ")"),
                      ctx.output == Output::kTable && isatty(STDERR_FILENO));
    status = CallAgent(ctx.channel, ctx.timeout + run_bound, &roced::v1::Agent::Stub::RunProbe, request, &result);
  }
  if (!status.ok()) {
    if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      return Fail(ctx, DescribeRpcError(status, ctx), kExitUsage);
    }
    return FailRpc(ctx, status);
  }
  Print(ctx.output, result, [&] { return ProbeResultText(result); });
  // A probe that ran and failed is what the caller asked to find out.
  return result.success() ? kExitOk : kExitFindings;
}

int RunProbesCommand(const CommandContext& ctx, const ProbeFlags& flags,
                     const std::vector<std::string>& args) {
  if (args.size() > 1) {
    std::cerr << "rocectl: usage: rocectl probes [PEER] [--kind latency|bandwidth] [--limit N]\n";
    return kExitUsage;
  }
  auto kind = ParseProbeKind(flags.kind, roced::v1::PROBE_KIND_UNSPECIFIED);
  if (!kind.ok()) {
    std::cerr << "rocectl: " << kind.status().message() << "\n";
    return kExitUsage;
  }
  roced::v1::ListProbeResultsRequest request;
  if (!args.empty()) request.set_peer(args[0]);
  request.set_kind(*kind);
  request.set_limit(static_cast<uint32_t>(std::min<uint64_t>(flags.limit, UINT32_MAX)));
  roced::v1::ListProbeResultsResponse response;
  grpc::Status status =
      CallAgent(ctx.channel, ctx.timeout, &roced::v1::Agent::Stub::ListProbeResults, request, &response);
  if (!status.ok()) return FailRpc(ctx, status);
  Print(ctx.output, response, [&] { return ProbeHistoryTable(response); });
  return kExitOk;
}

CommandRun BindProbe(util::ArgParser* parser) {
  auto flags = std::make_shared<ProbeFlags>();
  RegisterProbeFlags("probe", flags.get(), parser);
  return [flags](const CommandContext& ctx, const std::vector<std::string>& args) {
    return RunProbeCommand(ctx, *flags, args);
  };
}

CommandRun BindProbes(util::ArgParser* parser) {
  auto flags = std::make_shared<ProbeFlags>();
  RegisterProbeFlags("probes", flags.get(), parser);
  return [flags](const CommandContext& ctx, const std::vector<std::string>& args) {
    return RunProbesCommand(ctx, *flags, args);
  };
}

}  // namespace roced::ctl
