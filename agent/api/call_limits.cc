#include "agent/api/call_limits.h"

#include <grpcpp/server_context.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "util/escape.h"
#include "util/log.h"
#include "util/thread_name.h"

namespace roced::agent {
namespace {

using grpc::experimental::InterceptionHookPoints;

// One per call: counts it while it lives, and times each send.
class LimitInterceptor final : public grpc::experimental::Interceptor {
 public:
  LimitInterceptor(CallLimits* limits, grpc::ServerContextBase* context, bool tcp)
      : limits_(limits), context_(context), tcp_(tcp) {
    limits_->CallStarted(tcp_);
  }
  ~LimitInterceptor() override { limits_->CallEnded(context_, tcp_); }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    // PRE_SEND_CANCEL comes from TryCancel, which the watchdog calls: it
    // takes no lock here.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      limits_->SendStarted(context_);
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_SEND_MESSAGE)) {
      limits_->SendEnded(context_);
    }
    methods->Proceed();
  }

 private:
  CallLimits* const limits_;
  grpc::ServerContextBase* const context_;
  const bool tcp_;
};

class LimitFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  LimitFactory(CallLimits* limits, bool tcp) : limits_(limits), tcp_(tcp) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new LimitInterceptor(limits_, info->server_context(), tcp_);
  }

 private:
  CallLimits* const limits_;
  const bool tcp_;
};

}  // namespace

CallLimits::CallLimits(CallLimitOptions options, Report report)
    : options_(options), report_(std::move(report)), watchdog_([this] { Watch(); }) {}

CallLimits::~CallLimits() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  watchdog_.join();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> CallLimits::Factory(bool tcp) {
  return std::make_unique<LimitFactory>(this, tcp);
}

bool CallLimits::AtLimit() const {
  if (tcp_calls_ >= options_.max_tcp_calls) return true;
  for (const auto& [identity, n] : per_identity_) {
    if (n >= options_.max_per_identity) return true;
  }
  return false;
}

absl::Status CallLimits::Admit(const grpc::ServerContextBase* context, const std::string& identity) {
  absl::Status refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int& n = per_identity_[identity];
    if (n >= options_.max_per_identity) {
      refused = absl::ResourceExhaustedError(absl::StrCat(
          "too many calls in flight from ", util::EscapeForLog(identity, 128), ": at most ",
          options_.max_per_identity, " at once per caller over TCP; retry when some have finished"));
    } else if (tcp_calls_ > options_.max_tcp_calls) {  // this call is counted in tcp_calls_ already
      refused = absl::ResourceExhaustedError(absl::StrCat("the agent has ", options_.max_tcp_calls,
                                                          " calls in flight over TCP, its limit; retry later"));
    }
    if (refused.ok()) {
      ++n;
      admitted_[context] = identity;
    } else {
      if (n == 0) per_identity_.erase(identity);
      if (!refusing_) why_ = absl::StrCat("refusing calls: ", refused.message());
      refusing_ = true;
    }
  }
  if (!refused.ok()) Reconsider();
  return refused;
}

void CallLimits::CallStarted(bool tcp) {
  if (!tcp) return;
  std::lock_guard<std::mutex> lock(mu_);
  ++tcp_calls_;
}

void CallLimits::CallEnded(const grpc::ServerContextBase* context, bool tcp) {
  bool was_refusing = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tcp) --tcp_calls_;
    auto it = admitted_.find(context);
    if (it != admitted_.end()) {
      auto n = per_identity_.find(it->second);
      if (n != per_identity_.end() && --n->second <= 0) per_identity_.erase(n);
      admitted_.erase(it);
    }
    was_refusing = refusing_;
    if (refusing_ && !AtLimit()) refusing_ = false;
  }
  if (was_refusing) Reconsider();
}

void CallLimits::SendStarted(grpc::ServerContextBase* context) {
  std::lock_guard<std::mutex> lock(mu_);
  sends_[context] = Send{absl::Now() + options_.max_send_stall, false};
  changed_.notify_all();
}

void CallLimits::SendEnded(grpc::ServerContextBase* context) {
  std::unique_lock<std::mutex> lock(mu_);
  // The watchdog may be cancelling this call right now: the context must
  // outlive its TryCancel.
  changed_.wait(lock, [&] {
    auto it = sends_.find(context);
    return it == sends_.end() || !it->second.cancelling;
  });
  sends_.erase(context);
}

void CallLimits::Watch() {
  util::NameThisThread("roced-stall");
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    absl::Time next = absl::InfiniteFuture();
    const absl::Time now = absl::Now();
    std::vector<grpc::ServerContextBase*> stalled;
    for (auto& [context, send] : sends_) {
      if (send.cancelling) continue;
      if (send.deadline <= now) {
        send.cancelling = true;
        stalled.push_back(context);
      } else {
        next = std::min(next, send.deadline);
      }
    }
    if (!stalled.empty()) {
      lock.unlock();
      for (grpc::ServerContextBase* context : stalled) context->TryCancel();
      LOG_WARNING << "cancelled " << stalled.size() << " call(s) whose client read nothing for "
                  << absl::FormatDuration(options_.max_send_stall);
      lock.lock();
      for (grpc::ServerContextBase* context : stalled) {
        // Cancelled once: its send ends (failed) and SendEnded drops it.
        sends_[context] = Send{absl::InfiniteFuture(), false};
      }
      cancelled_ += static_cast<int>(stalled.size());
      changed_.notify_all();
      continue;
    }
    if (next == absl::InfiniteFuture()) {
      changed_.wait(lock);
    } else {
      changed_.wait_for(lock, absl::ToChronoNanoseconds(next - now) + std::chrono::milliseconds(1));
    }
  }
}

void CallLimits::Reconsider() {
  std::lock_guard<std::mutex> report_lock(report_mu_);
  bool refusing;
  std::string why;
  {
    std::lock_guard<std::mutex> lock(mu_);
    refusing = refusing_;
    why = why_;
  }
  if (refusing == reported_refusing_) return;
  reported_refusing_ = refusing;
  if (refusing) {
    LOG_WARNING << "gRPC: " << why;
  }
  if (report_) report_(!refusing, why);
}

int CallLimits::tcp_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tcp_calls_;
}

int CallLimits::stalled_sends_cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

}  // namespace roced::agent
