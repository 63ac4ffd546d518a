// roced_flood_client: sends one oversized ApplyConfig (a NodeConfig of N
// empty interfaces) to an agent and reports how the agent answered. Used by
// bench/oversized_apply.sh and tests/e2e/oversized_apply_e2e.sh.
//
// Usage: roced_flood_client TARGET [INTERFACES] [--apply]
//   TARGET      host:port or unix:/path/to/roced.sock
//   INTERFACES  number of empty interfaces (default 1000000: ~2 MB)
//   --apply     not a dry run (the default is dry_run: true)
// Prints one line: request_bytes=B elapsed_ms=T code=NAME message=TEXT
// (the message cut at 300 bytes). Exit 0 when an answer came, 2 on usage
// errors.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "roced/v1/agent.grpc.pb.h"

namespace {

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    default: return "OTHER";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TARGET [INTERFACES] [--apply]\n", argv[0]);
    return 2;
  }
  const std::string target = argv[1];
  long count = 1000000;
  bool dry_run = true;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--apply") {
      dry_run = false;
    } else {
      char* end = nullptr;
      count = std::strtol(a.c_str(), &end, 10);
      if (end == a.c_str() || *end != '\0' || count < 0) {
        std::fprintf(stderr, "bad interface count '%s'\n", a.c_str());
        return 2;
      }
    }
  }
  roced::v1::ApplyConfigRequest request;
  request.set_dry_run(dry_run);
  auto* config = request.mutable_config();
  config->set_api_version("roced/v1");
  config->set_kind("NodeConfig");
  for (long i = 0; i < count; ++i) config->add_interfaces();
  const size_t bytes = request.ByteSizeLong();

  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(-1);
  auto stub = roced::v1::Agent::NewStub(
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  // Connect first, so the time measured is the agent's answer, not the
  // connection set-up.
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    roced::v1::NodeState state;
    grpc::Status s = stub->GetState(&ctx, {}, &state);
    if (!s.ok()) {
      std::fprintf(stderr, "GetState before the flood failed: %s\n", s.error_message().c_str());
      return 1;
    }
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  roced::v1::ApplyConfigResponse response;
  auto start = std::chrono::steady_clock::now();
  grpc::Status status = stub->ApplyConfig(&ctx, request, &response);
  auto elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  std::string message = status.error_message();
  if (message.size() > 300) message = message.substr(0, 300) + "...";
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::printf("request_bytes=%zu elapsed_ms=%.1f code=%s message=%s\n", bytes, elapsed.count(),
              CodeName(status.error_code()), message.c_str());
  return 0;
}
