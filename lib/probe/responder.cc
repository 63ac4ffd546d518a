#include "probe/responder.h"

#include "util/escape.h"

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "probe/random_id.h"
#include "probe/reason.h"
#include "util/log.h"
#include "util/thread_name.h"

namespace roced::probe {

// One responder endpoint and the thread answering latency writes on it.
struct ResponderRegistry::Responder {
  std::string id;
  std::string initiator;
  std::string caller;
  uint64_t pinned = 0;
  roced::v1::ProbeKind kind = roced::v1::PROBE_KIND_UNSPECIFIED;
  std::unique_ptr<Endpoint> endpoint;
  std::atomic<bool> stop{false};
  // Set when the serving thread gave up (an error: the initiator vanished,
  // the device is going): the endpoint is released at the next reap, not
  // held to the end of its lease (its queue pairs would keep the device
  // from being unregistered: rdma link delete waits for them).
  std::atomic<bool> failed{false};
  std::thread server;
  absl::Time expires;
};

ResponderRegistry::ResponderRegistry(EndpointFactory* factory, LocalPortFn local_port,
                                     ResponderLimits limits)
    : factory_(factory), local_port_(std::move(local_port)), limits_(limits) {}

ResponderRegistry::~ResponderRegistry() { Shutdown(); }

absl::Status ResponderRegistry::AtLimit(const std::string& caller, uint64_t pinned) const {
  if (responders_.size() >= limits_.max_endpoints) {
    return absl::ResourceExhaustedError(absl::StrCat(responders_.size(), " probe endpoints open; the limit is ",
                                                     limits_.max_endpoints));
  }
  size_t mine = 0;
  uint64_t held = 0;
  for (const auto& [id, r] : responders_) {
    if (r->caller == caller) ++mine;
    held += r->pinned;
  }
  if (mine >= limits_.max_per_caller) {
    return absl::ResourceExhaustedError(absl::StrCat(mine, " probe endpoints open for ", util::Quoted(caller),
                                                     "; one caller may hold ", limits_.max_per_caller));
  }
  if (held + pinned > limits_.max_pinned_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("probe endpoints pin ", held, " bytes; ", pinned,
                                                     " more would pass the limit of ", limits_.max_pinned_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Endpoint>> ResponderRegistry::CreateConnected(
    const roced::v1::OpenEndpointRequest& request) const {
  if (factory_ == nullptr) return absl::FailedPreconditionError(kNoEngineMessage);
  absl::StatusOr<LocalPort> local = local_port_();
  if (!local.ok()) return absl::FailedPreconditionError(local.status().message());
  EndpointSpec spec = SpecOn(*local);
  spec.kind = request.kind();
  spec.size = request.size();
  spec.qps = static_cast<uint32_t>(request.initiator_qps_size());
  spec.outstanding = 1;  // the responder writes only to answer latency pings
  spec.busy_poll = request.busy_poll();
  absl::StatusOr<std::unique_ptr<Endpoint>> endpoint = factory_->Create(spec);
  if (!endpoint.ok()) {
    const absl::StatusCode code = endpoint.status().code() == absl::StatusCode::kResourceExhausted
                                      ? absl::StatusCode::kResourceExhausted
                                      : absl::StatusCode::kFailedPrecondition;
    return absl::Status(code, endpoint.status().message());
  }
  std::vector<roced::v1::QpEndpoint> remote(request.initiator_qps().begin(),
                                            request.initiator_qps().end());
  if (absl::Status s = (*endpoint)->Connect(remote, request.traffic_class()); !s.ok()) {
    return absl::InvalidArgumentError(s.message());
  }
  return endpoint;
}

absl::StatusOr<roced::v1::OpenEndpointResponse> ResponderRegistry::Open(
    const roced::v1::OpenEndpointRequest& request, const std::string& caller) {
  if (absl::Status s = ValidateOpenRequest(request); !s.ok()) return s;
  const uint64_t pinned = 2 * static_cast<uint64_t>(request.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = AtLimit(caller, pinned); !s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<Endpoint>> endpoint = CreateConnected(request);
  if (!endpoint.ok()) return endpoint.status();

  auto responder = std::make_shared<Responder>();
  responder->id = RandomId();
  responder->initiator = request.initiator();
  responder->caller = caller;
  responder->pinned = pinned;
  responder->kind = request.kind();
  responder->endpoint = std::move(*endpoint);
  const uint32_t lease = LeaseSeconds(request.lease_seconds());
  responder->expires = absl::Now() + absl::Seconds(lease);

  roced::v1::OpenEndpointResponse response;
  response.set_endpoint_id(responder->id);
  response.set_device(responder->endpoint->device());
  for (const auto& qp : responder->endpoint->local()) *response.add_responder_qps() = qp;

  {
    std::lock_guard<std::mutex> lock(mu_);
    // Checked again: other opens ran while this one created its endpoint.
    if (shut_down_) return absl::UnavailableError("agent is stopping");
    if (absl::Status s = AtLimit(caller, pinned); !s.ok()) return s;
    if (request.kind() == roced::v1::PROBE_KIND_LATENCY) {
      Responder* r = responder.get();
      r->server = std::thread([r, idle = limits_.serve_idle] {
        util::NameThisThread("roced-respond");
        absl::Status s = r->endpoint->ServeLatency(&r->stop, idle);
        if (!s.ok()) {
          LOG_INFO << "probe endpoint " << r->id << " for " << r->initiator
                   << " stopped answering: " << ReasonOf(s) << ": " << s.message();
          r->failed.store(true);
        }
      });
    }
    responders_[responder->id] = responder;
  }
  LOG_DEBUG << "probe endpoint " << responder->id << " open for " << request.initiator() << " ("
            << ProbeKindName(request.kind()) << ", " << request.size() << " B, lease " << lease
            << " s)";
  return response;
}

void ResponderRegistry::Release(const std::shared_ptr<Responder>& responder) {
  responder->stop.store(true);
  if (responder->server.joinable()) responder->server.join();
  responder->endpoint.reset();
}

absl::Status ResponderRegistry::Close(const std::string& endpoint_id) {
  std::shared_ptr<Responder> responder;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = responders_.find(endpoint_id);
    if (it == responders_.end()) {
      return absl::NotFoundError(
          absl::StrCat("no probe endpoint '", endpoint_id, "' (closed, or its lease expired)"));
    }
    responder = it->second;
    responders_.erase(it);
  }
  Release(responder);
  return absl::OkStatus();
}

void ResponderRegistry::ReapExpired(absl::Time now) {
  std::vector<std::shared_ptr<Responder>> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) return;
    for (auto it = responders_.begin(); it != responders_.end();) {
      if (it->second->expires <= now || it->second->failed.load()) {
        expired.push_back(it->second);
        it = responders_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& r : expired) {
    LOG_INFO << "probe endpoint " << r->id << " for " << r->initiator
             << (r->failed.load() ? ": stopped answering; released"
                                  : ": lease expired without CloseEndpoint; released");
    Release(r);
  }
}

void ResponderRegistry::Shutdown() {
  std::map<std::string, std::shared_ptr<Responder>> responders;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
    responders.swap(responders_);
  }
  for (auto& [id, r] : responders) Release(r);
}

size_t ResponderRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return responders_.size();
}

}  // namespace roced::probe
