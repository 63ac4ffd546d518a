// Bounds on what callers who never read can hold (the flow-control stall:
// a client that opens streams with an HTTP/2 window of 0 and never sends
// WINDOW_UPDATE leaves each of its calls' server threads blocked in a
// send for as long as the connection lives).
//
//   calls in flight per TCP identity  at most max_per_identity; the gate
//       asks Admit() once it knows who is calling, before the handler
//       runs, and refuses beyond with RESOURCE_EXHAUSTED naming the limit.
//       A call counts until gRPC is done with it (its response sent too:
//       a unary response waiting for a window holds its thread as well).
//   calls in flight over TCP in all     at most max_tcp_calls (below the TCP
//       server's thread budget, so gated calls never take its last threads).
//   a send (a streamed message, a unary response) blocked longer than
//       max_send_stall   the call is cancelled (TryCancel), which ends the
//       send and frees the thread; on both servers.
//
// The bookkeeping hangs off a gRPC server interceptor (Factory): one per
// call, made before the handler, destroyed after the call's last op. While
// calls are being refused for a limit, `report` is told (healthy=false,
// why) once; when the limits are clear again (healthy=true). Thread-safe.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace roced::agent {

struct CallLimitOptions {
  int max_per_identity = 32;
  int max_tcp_calls = 192;
  absl::Duration max_send_stall = absl::Seconds(20);
};

class CallLimits {
 public:
  using Report = std::function<void(bool healthy, const std::string& why)>;

  CallLimits(CallLimitOptions options, Report report);
  ~CallLimits();
  CallLimits(const CallLimits&) = delete;
  CallLimits& operator=(const CallLimits&) = delete;

  // Counts the call on `context` against `identity` (a TCP caller), or
  // refuses it (RESOURCE_EXHAUSTED, naming the limit). The count ends when
  // the call's interceptor is destroyed.
  absl::Status Admit(const grpc::ServerContextBase* context, const std::string& identity) ABSL_LOCKS_EXCLUDED(mu_);

  // Interceptors for one server; `tcp` counts its calls in max_tcp_calls.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> Factory(bool tcp);

  // For tests and /metrics-free checks: calls in flight over TCP, and
  // sends cancelled for stalling so far.
  int tcp_calls() const ABSL_LOCKS_EXCLUDED(mu_);
  int stalled_sends_cancelled() const ABSL_LOCKS_EXCLUDED(mu_);

  // What the interceptors call.
  void CallStarted(bool tcp) ABSL_LOCKS_EXCLUDED(mu_);
  void CallEnded(const grpc::ServerContextBase* context, bool tcp) ABSL_LOCKS_EXCLUDED(mu_);
  void SendStarted(grpc::ServerContextBase* context) ABSL_LOCKS_EXCLUDED(mu_);
  void SendEnded(grpc::ServerContextBase* context) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Send {
    absl::Time deadline;
    bool cancelling = false;
  };
  void Watch();
  // Whether calls are being refused, and tells `report_` on a change.
  void Reconsider() ABSL_LOCKS_EXCLUDED(mu_, report_mu_);
  bool AtLimit() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CallLimitOptions options_;
  const Report report_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, int> per_identity_ ABSL_GUARDED_BY(mu_);
  std::map<const grpc::ServerContextBase*, std::string> admitted_ ABSL_GUARDED_BY(mu_);
  std::map<grpc::ServerContextBase*, Send> sends_ ABSL_GUARDED_BY(mu_);
  int tcp_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int cancelled_ ABSL_GUARDED_BY(mu_) = 0;
  bool refusing_ ABSL_GUARDED_BY(mu_) = false;
  std::string why_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::mutex report_mu_;  // orders the reports; taken before mu_
  bool reported_refusing_ = false;
  std::thread watchdog_;
};

}  // namespace roced::agent
