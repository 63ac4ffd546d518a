// `rocectl events [--for DUR] [--count N] [--initial]`: the agent's
// WatchState stream, one line per event as it happens (device, config,
// drift, reconcile, PFC storm), or one compact proto3 JSON object per line
// with -o json (NDJSON, for scripts).
#include <chrono>
#include <iostream>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "roced/v1/agent.grpc.pb.h"
#include "tools/rocectl/call.h"
#include "tools/rocectl/commands.h"

namespace roced::ctl {

namespace {

struct EventsFlags {
  absl::Duration for_duration = absl::ZeroDuration();
  uint64_t count = 0;
  bool initial = false;
};

std::string Source(roced::v1::ConfigSource s) {
  absl::string_view name = roced::v1::ConfigSource_Name(s);
  absl::ConsumePrefix(&name, "CONFIG_SOURCE_");
  return absl::AsciiStrToLower(name);
}

std::string Steps(const roced::v1::ApplyResult& r) {
  std::vector<std::string> failed;
  for (const auto& s : r.steps()) {
    if (!s.error().empty()) failed.push_back(absl::StrCat(s.step().object(), " ", s.step().field(), ": ", s.error()));
  }
  std::string out = absl::StrCat(r.steps_size(), " step(s) ", r.success() ? "applied" : "FAILED",
                                 r.rolled_back() ? ", rolled back" : "");
  if (!failed.empty()) absl::StrAppend(&out, " (", absl::StrJoin(failed, "; "), ")");
  return out;
}

int RunEvents(const CommandContext& ctx, const EventsFlags& flags, const std::vector<std::string>& args) {
  if (!NoArguments("events", args)) return kExitUsage;
  if (flags.for_duration < absl::ZeroDuration()) {
    std::cerr << "rocectl: --for must not be negative\n";
    return kExitUsage;
  }
  roced::v1::Agent::Stub stub(ctx.channel);
  grpc::ClientContext call;
  if (flags.for_duration > absl::ZeroDuration()) call.set_deadline(DeadlineIn(flags.for_duration));
  roced::v1::WatchStateRequest request;
  request.set_skip_initial_state(!flags.initial);
  std::unique_ptr<grpc::ClientReader<roced::v1::StateEvent>> reader = stub.WatchState(&call, request);
  roced::v1::StateEvent event;
  uint64_t seen = 0;
  while ((flags.count == 0 || seen < flags.count) && reader->Read(&event)) {
    ++seen;
    if (ctx.output == Output::kTable) {
      std::cout << EventLine(event) << std::endl;
    } else if (ctx.output == Output::kJson) {
      std::cout << ToJsonLine(event) << std::endl;
    } else {
      std::cout << "---\n" << ToYaml(event) << std::flush;
    }
  }
  if (flags.count != 0 && seen >= flags.count) {
    call.TryCancel();
    return kExitOk;
  }
  grpc::Status st = reader->Finish();
  if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && flags.for_duration > absl::ZeroDuration()) {
    return kExitOk;  // --for ran out: the end asked for
  }
  std::cerr << "rocectl: events: " << (st.ok() ? "the agent ended the stream" : DescribeRpcError(st, ctx))
            << " after " << seen << " event(s)\n";
  return kExitFailed;
}

}  // namespace

std::string EventLine(const roced::v1::StateEvent& e) {
  const std::string at = google::protobuf::util::TimeUtil::ToString(e.at());
  switch (e.event_case()) {
    case roced::v1::StateEvent::kState:
      return absl::StrCat(at, "  state      ", e.state().devices_size(), " device(s), generation ",
                          e.state().config().generation());
    case roced::v1::StateEvent::kDevice:
      return absl::StrCat(at, "  device     ", e.device().device(), " ",
                          absl::AsciiStrToLower(absl::StripPrefix(roced::v1::DeviceEvent::Kind_Name(e.device().kind()), "KIND_")),
                          e.device().detail().empty() ? "" : absl::StrCat(" (", e.device().detail(), ")"));
    case roced::v1::StateEvent::kConfig: {
      const auto& c = e.config();
      if (!c.accepted()) return absl::StrCat(at, "  config     rejected: ", c.error());
      if (c.confirmed()) {
        return absl::StrCat(at, "  config     generation ", c.generation(), " confirmed",
                            c.identity().empty() ? "" : absl::StrCat(" by ", c.identity()));
      }
      if (c.has_rollback()) {
        return absl::StrCat(at, "  config     generation ", c.rollback().generation(), " ROLLED BACK (",
                            c.rollback().reason(), ": ", c.rollback().detail(), "); generation ", c.generation(),
                            " is its previous config");
      }
      return absl::StrCat(at, "  config     generation ", c.generation(), " accepted from ", Source(c.source()),
                          c.identity().empty() ? "" : absl::StrCat(" by ", c.identity()));
    }
    case roced::v1::StateEvent::kDrift: {
      const auto& f = e.drift().field();
      return absl::StrCat(at, "  drift      ", f.object(), " ", f.field(), ": ", f.observed(), " (wanted ",
                          f.desired(), ")", e.drift().corrected() ? ", corrected" : ", left as is");
    }
    case roced::v1::StateEvent::kReconcile:
      return absl::StrCat(at, "  reconcile  generation ", e.reconcile().generation(), ": ",
                          Steps(e.reconcile().result()));
    case roced::v1::StateEvent::kPfcStorm:
      return absl::StrCat(at, "  pfc-storm  ", e.pfc_storm().netdev(), " priority ", e.pfc_storm().priority(),
                          e.pfc_storm().stormed() ? " storming" : " calm again", " (", e.pfc_storm().rx_pause_frames(),
                          " rx pause frames)");
    case roced::v1::StateEvent::EVENT_NOT_SET:
      break;
  }
  return absl::StrCat(at, "  (an event this rocectl does not know)");
}

CommandRun BindEvents(util::ArgParser* parser) {
  auto flags = std::make_shared<EventsFlags>();
  parser->AddDuration("for", &flags->for_duration, "DUR",
                      "events: stop after this long (exit 0); 0 (the default) watches until interrupted.");
  parser->AddUint("count", &flags->count, "N", "events: stop after N events (exit 0); 0: no limit.");
  parser->AddBool("initial", &flags->initial, "events: start with the current state as the first event.");
  return [flags](const CommandContext& ctx, const std::vector<std::string>& args) {
    return RunEvents(ctx, *flags, args);
  };
}

}  // namespace roced::ctl
