// grpc.health.v1.Health served synchronously (proto/grpc/health/v1/health.proto).
//
// gRPC's own service (grpc::EnableDefaultHealthCheckService) is written with
// the callback API, whose completion queue brings two threads that wake every
// second for the life of the process, a large share of an idle agent's CPU
// (bench/idle_cpu.sh). This one runs on the sync server's threads like every
// other roced RPC.
//
// Check answers the status now, NOT_FOUND for a service never set. Watch
// sends the status now (SERVICE_UNKNOWN for a service never set), then each
// change, until the caller cancels or Shutdown; at most kMaxWatchers at once
// (a watcher holds a server thread), RESOURCE_EXHAUSTED beyond. The TCP and
// the unix server have one each, so TCP callers cannot take the socket's
// watchers; a watcher whose client stops reading is cancelled after
// kMaxSendStall (agent/serve/server.h). Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <condition_variable>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"

namespace roced::agent {

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  static constexpr int kMaxWatchers = 8;

  // "" is the server as a whole.
  void SetServingStatus(const std::string& service, bool serving);
  // Every service NOT_SERVING, and every Watch ends (so that the server's
  // own Shutdown does not wait on them).
  void Shutdown();

  grpc::Status Check(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override;
  grpc::Status Watch(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;

 private:
  using Status = grpc::health::v1::HealthCheckResponse::ServingStatus;
  Status StatusOf(const std::string& service) const;  // mu_ held

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, bool> serving_;
  uint64_t generation_ = 0;  // moves with every change
  int watchers_ = 0;
  bool shutdown_ = false;
};

}  // namespace roced::agent
