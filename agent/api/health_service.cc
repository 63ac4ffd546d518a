#include "agent/api/health_service.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace roced::agent {

using grpc::health::v1::HealthCheckResponse;

namespace {
// Longest name Check and Watch look up: a service's full name is far shorter.
constexpr size_t kMaxServiceName = 256;
// How often a Watch with nothing to send looks whether its caller is gone
// (the sync API has no cancellation callback).
constexpr auto kCancelPoll = std::chrono::seconds(1);

grpc::Status CheckRequest(const grpc::health::v1::HealthCheckRequest& request) {
  if (request.service().size() > kMaxServiceName) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("service: ", request.service().size(), " bytes, at most ", kMaxServiceName));
  }
  return grpc::Status::OK;
}
}  // namespace

void HealthService::SetServingStatus(const std::string& service, bool serving) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return;
  auto [it, added] = serving_.try_emplace(service, serving);
  if (!added && it->second == serving) return;
  it->second = serving;
  ++generation_;
  changed_.notify_all();
}

void HealthService::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  for (auto& [name, serving] : serving_) serving = false;
  ++generation_;
  changed_.notify_all();
}

HealthService::Status HealthService::StatusOf(const std::string& service) const {
  auto it = serving_.find(service);
  if (it == serving_.end()) return HealthCheckResponse::SERVICE_UNKNOWN;
  return it->second ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
}

grpc::Status HealthService::Check(grpc::ServerContext*, const grpc::health::v1::HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  if (grpc::Status s = CheckRequest(*request); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  const Status status = StatusOf(request->service());
  if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("unknown service '", request->service(), "'"));
  }
  response->set_status(status);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  if (grpc::Status s = CheckRequest(*request); !s.ok()) return s;
  std::unique_lock<std::mutex> lock(mu_);
  if (watchers_ >= kMaxWatchers) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("too many health Watch streams: at most ", kMaxWatchers, " may be open at once"));
  }
  ++watchers_;
  Status sent = HealthCheckResponse::UNKNOWN;
  uint64_t seen = generation_ - 1;  // send the first status at once
  while (!context->IsCancelled()) {
    if (seen != generation_) {
      seen = generation_;
      const Status now = StatusOf(request->service());
      if (now == sent) continue;
      sent = now;
      HealthCheckResponse response;
      response.set_status(now);
      lock.unlock();
      const bool written = writer->Write(response);
      lock.lock();
      if (!written) break;
      continue;  // a change made during the write (Shutdown's too) is sent next
    }
    if (shutdown_) break;
    changed_.wait_for(lock, kCancelPoll);
  }
  --watchers_;
  if (shutdown_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent is stopping");
  return grpc::Status::OK;
}

}  // namespace roced::agent
