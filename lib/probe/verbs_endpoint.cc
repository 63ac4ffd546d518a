#include "probe/verbs_endpoint.h"

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>

#include "absl/strings/str_cat.h"
#include "hal/verbs_devices.h"
#include "probe/gid.h"
#include "probe/reason.h"
#include "util/log.h"
#include "util/status_macros.h"

namespace roced::probe {

ibv_mtu BytesToIbMtu(uint32_t bytes) {
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  if (bytes >= 1024) return IBV_MTU_1024;
  if (bytes >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

uint32_t PathMtuBytes(uint32_t local_active_mtu, uint32_t remote_active_mtu) {
  if (remote_active_mtu == 0) return local_active_mtu;
  return std::min(local_active_mtu, remote_active_mtu);
}

// An open device context with its protection domain. Endpoints hold a
// shared_ptr, so a handle dropped from the factory's cache (device gone)
// lives until its last endpoint is destroyed.
namespace {
std::mutex bind_failures_mu;
BufferBindFailures bind_failures;
}  // namespace

BufferBindFailures BufferBindFailuresSoFar() {
  std::lock_guard<std::mutex> lock(bind_failures_mu);
  return bind_failures;
}

void RecordBufferBindFailure(int32_t node, const std::string& error) {
  std::lock_guard<std::mutex> lock(bind_failures_mu);
  ++bind_failures.count;
  bind_failures.node = node;
  bind_failures.error = error;
}

class DeviceHandle {
 public:
  DeviceHandle(std::string name, std::string uverbs_path, ibv_context* context, ibv_pd* pd)
      : name_(std::move(name)), uverbs_path_(std::move(uverbs_path)), context_(context), pd_(pd) {}
  ~DeviceHandle() {
    if (pd_ != nullptr && ibv_dealloc_pd(pd_) != 0) {
      LOG_WARNING << "probe: ibv_dealloc_pd on " << name_ << ": " << std::strerror(errno);
    }
    if (context_ != nullptr) ibv_close_device(context_);
  }
  DeviceHandle(const DeviceHandle&) = delete;
  DeviceHandle& operator=(const DeviceHandle&) = delete;

  const std::string& name() const { return name_; }
  ibv_context* context() const { return context_; }
  // Whether the device is being removed: its uverbs node in sysfs
  // (ibv_device.dev_path) is deleted first, then the kernel waits for every
  // open context to close (drivers that cannot disassociate them, like rxe,
  // send no event), so a run that goes on holds the removal up. One
  // access(2); thread-safe.
  bool Removing() const { return !uverbs_path_.empty() && ::access(uverbs_path_.c_str(), F_OK) != 0; }
  ibv_pd* pd() const { return pd_; }

  // Reads pending async events without blocking. False once the device
  // reported a fatal error (it is unusable; open it again).
  bool DrainEvents() {
    ibv_async_event event;
    while (ibv_get_async_event(context_, &event) == 0) {
      if (event.event_type == IBV_EVENT_DEVICE_FATAL) fatal_ = true;
      if (event.event_type == IBV_EVENT_GID_CHANGE) {
        LOG_INFO << "probe: " << name_ << ": GID table changed; new endpoints resolve it again";
      }
      ibv_ack_async_event(&event);
    }
    return !fatal_;
  }

 private:
  const std::string name_;
  const std::string uverbs_path_;
  ibv_context* const context_;
  ibv_pd* const pd_;
  bool fatal_ = false;
};

namespace {

using Clock = std::chrono::steady_clock;

int64_t Nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

Clock::time_point ClockDeadline(absl::Duration from_now) {
  if (from_now == absl::InfiniteDuration()) return Clock::time_point::max();
  return Clock::now() + absl::ToChronoNanoseconds(from_now);
}

Clock::time_point ClockDeadline(absl::Time at) {
  if (at == absl::InfiniteFuture()) return Clock::time_point::max();
  return ClockDeadline(at - absl::Now());
}

// Waiting for the peer: spin like ib_write_lat does for as long as a round
// trip plausibly takes (a yield or sleep in the loop adds its wake-up time
// to every sample), then yield, and after a long idle spell (a responder
// between runs) sleep in short steps so an idle endpoint costs no CPU.
class Backoff {
 public:
  explicit Backoff(bool busy) : busy_(busy) {}
  void Pause() {
    if (busy_) return;
    ++polls_;
    if ((polls_ & 63) != 0 && phase_ == 0) return;
    const Clock::duration idle = Clock::now() - start_;
    if (idle < std::chrono::milliseconds(2)) {
      phase_ = 0;
    } else if (idle < std::chrono::milliseconds(10)) {
      phase_ = 1;
      sched_yield();
    } else {
      phase_ = 2;
      struct timespec ts = {0, 50 * 1000};
      nanosleep(&ts, nullptr);
    }
  }

 private:
  const bool busy_;
  Clock::time_point start_ = Clock::now();
  uint64_t polls_ = 0;
  int phase_ = 0;
};

struct QpDeleter {
  void operator()(ibv_qp* qp) const {
    if (ibv_destroy_qp(qp) != 0) {
      LOG_WARNING << "probe: ibv_destroy_qp: " << std::strerror(errno);
    }
  }
};
struct CqDeleter {
  void operator()(ibv_cq* cq) const {
    if (ibv_destroy_cq(cq) != 0) {
      LOG_WARNING << "probe: ibv_destroy_cq: " << std::strerror(errno);
    }
  }
};
struct MrDeleter {
  void operator()(ibv_mr* mr) const {
    if (ibv_dereg_mr(mr) != 0) {
      LOG_WARNING << "probe: ibv_dereg_mr: " << std::strerror(errno);
    }
  }
};

// Page-aligned anonymous memory for the registered buffer.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer() {
    if (data_ != nullptr) munmap(data_, length_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // Maps `length` bytes (rounded up to pages), preferring NUMA node
  // `numa_node` (-1: no preference). Pages are placed when first touched,
  // so the caller should write them before registering.
  absl::Status Allocate(size_t length, int numa_node, bool hugepages) {
    void* p = MAP_FAILED;
    if (hugepages) {
      // 2 MiB pages from the node's reserved pool (MAP_HUGE_2MB); with no
      // free page the mmap fails at once and normal pages are used.
      constexpr size_t kHuge = size_t{2} << 20;
      constexpr int kMapHuge2Mb = 21 << MAP_HUGE_SHIFT;
      length_ = (length + kHuge - 1) / kHuge * kHuge;
      p = mmap(nullptr, length_, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | kMapHuge2Mb, -1, 0);
      if (p == MAP_FAILED) {
        LOG_DEBUG << "probe: no 2 MiB hugepage for the buffer (" << std::strerror(errno)
                  << "); using normal pages";
      }
      huge_ = p != MAP_FAILED;
    }
    if (p == MAP_FAILED) {
      const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      length_ = (length + page - 1) / page * page;
      p = mmap(nullptr, length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (p == MAP_FAILED) {
      length_ = 0;
      return ProbeError(absl::StatusCode::kResourceExhausted, kReasonLocalError,
                        absl::StrCat("mmap ", length, " bytes: ", std::strerror(errno)));
    }
    data_ = static_cast<uint8_t*>(p);
    if (numa_node >= 0 && numa_node < 64) {
      // mbind(2) through syscall(2): libnuma is not a dependency. A
      // preference, not a requirement: on failure the kernel's default
      // placement stands.
      constexpr int kMpolPreferred = 1;
      unsigned long mask = 1UL << numa_node;
      if (syscall(SYS_mbind, p, length_, kMpolPreferred, &mask, 64, 0) != 0) {
        LOG_DEBUG << "probe: mbind to NUMA node " << numa_node << ": " << std::strerror(errno);
        RecordBufferBindFailure(numa_node, std::strerror(errno));
      }
    }
    return absl::OkStatus();
  }
  uint8_t* data() const { return data_; }
  size_t length() const { return length_; }
  bool huge() const { return huge_; }

 private:
  uint8_t* data_ = nullptr;
  size_t length_ = 0;
  bool huge_ = false;
};

absl::Status VerbsError(absl::string_view what, int err) {
  return ProbeError(err == ENOMEM ? absl::StatusCode::kResourceExhausted
                                  : absl::StatusCode::kInternal,
                    kReasonLocalError, absl::StrCat(what, ": ", std::strerror(err)));
}

absl::Status WcError(const ibv_wc& wc) {
  return ProbeError(absl::StatusCode::kAborted, WcErrorReason(wc.status),
                    absl::StrCat("work completion error on QP ", wc.qp_num, ": ",
                                 ibv_wc_status_str(wc.status), " (status ", wc.status,
                                 ", vendor error 0x", absl::Hex(wc.vendor_err), ")"));
}

// The bookkeeping of one RunBandwidth: what each QP has posted, has in
// flight and has left unsignaled, what completed and counts, and the peak
// rate's window.
struct BandwidthRunState {
  BandwidthRunState(const BandwidthOptions& options, size_t qps, uint32_t depth, uint32_t msg_size)
      : nqp(qps),
        per_qp(std::clamp<uint32_t>(static_cast<uint32_t>((options.outstanding + qps - 1) / qps), 1,
                                    depth)),
        // Every cq_mod-th work request is signaled and its completion
        // retires the ones before it (RC completes in order), as ib_write_bw
        // does. The wr_id of a signaled request carries its QP and how many
        // it retires, so a counted run's last, shorter batch is accounted
        // exactly.
        cq_mod(std::clamp<uint32_t>(per_qp / 4, 1, 32)),
        counted(options.messages > 0),
        size(msg_size),
        quota(qps, 0),
        posted(qps, 0),
        in_flight(qps, 0),
        unsignaled(qps, 0),
        window(absl::ToChronoNanoseconds(options.peak_window)),
        completion_timeout(absl::ToChronoNanoseconds(options.completion_timeout)) {
    // A counted run splits its messages over the QPs (the first ones take
    // the remainder).
    for (size_t q = 0; q < nqp; ++q) {
      quota[q] = options.messages / nqp + (q < options.messages % nqp ? 1 : 0);
    }
    start = Clock::now();
    end = start + absl::ToChronoNanoseconds(options.duration);
    // What is still in flight at the end drains at the link's pace: on a
    // slow link (Soft-RoCE, a congested path) 128 x 64 KiB can take
    // seconds. Only a stall (no completion for completion_timeout) or a
    // drain far beyond the run is a failure.
    drain_limit = end + 2 * absl::ToChronoNanoseconds(options.duration) + completion_timeout;
    window_start = start;
    last_progress = start;
    last_counted = start;
  }

  // Retires what `n` completions signal. A failed one ends the run.
  absl::Status Account(const ibv_wc* wcs, int n, Clock::time_point after) {
    for (int k = 0; k < n; ++k) {
      if (wcs[k].status != IBV_WC_SUCCESS) return WcError(wcs[k]);
      const size_t q = static_cast<size_t>(wcs[k].wr_id & 0xffffffffu);
      const uint32_t retired = static_cast<uint32_t>(wcs[k].wr_id >> 32);
      if (q >= nqp) continue;
      in_flight[q] -= std::min(in_flight[q], retired);
      completed += retired;
      // What completed within the run's duration counts (all of a counted
      // run), over the time up to its last completion (as ib_write_bw
      // divides by first post to last completion): each completion retires
      // up to cq_mod messages at once, and dividing by the full duration
      // would lose up to a chunk's worth at the end.
      if (counted || after <= end) {
        run.messages += retired;
        run.bytes += static_cast<uint64_t>(retired) * size;
        last_counted = after;
      }
    }
    return absl::OkStatus();
  }

  // A window closes after peak_window and at least four completions: each
  // completion retires cq_mod messages at once, and a window with one
  // completion on a slow link would report that burst as the peak.
  void UpdatePeak(int n, Clock::time_point after) {
    window_completions += static_cast<uint32_t>(n);
    if ((counted || after <= end) && after - window_start >= window && window_completions >= 4) {
      const double secs = std::chrono::duration<double>(after - window_start).count();
      run.peak_bits_per_second = std::max(
          run.peak_bits_per_second, static_cast<double>(run.bytes - window_bytes) * 8.0 / secs);
      window_start = after;
      window_bytes = run.bytes;
      window_completions = 0;
    }
  }

  // Everything that will be posted was, and nothing is in flight.
  bool Drained(bool stopping) const {
    const bool all_posted =
        stopping || (counted && std::equal(posted.begin(), posted.end(), quota.begin()));
    return all_posted &&
           std::all_of(in_flight.begin(), in_flight.end(), [](uint32_t f) { return f == 0; });
  }

  const size_t nqp;
  const uint32_t per_qp;
  const uint32_t cq_mod;
  const bool counted;
  const uint32_t size;
  std::vector<uint64_t> quota;
  std::vector<uint64_t> posted;
  std::vector<uint32_t> in_flight;
  std::vector<uint32_t> unsignaled;
  const std::chrono::nanoseconds window;
  const std::chrono::nanoseconds completion_timeout;
  BandwidthRun run;
  Clock::time_point start;
  Clock::time_point end;
  Clock::time_point drain_limit;
  Clock::time_point window_start;
  uint64_t window_bytes = 0;
  uint32_t window_completions = 0;
  uint64_t completed = 0;  // messages, including those after `end`
  Clock::time_point last_progress;
  Clock::time_point last_counted;
};

class VerbsEndpoint final : public Endpoint {
 public:
  VerbsEndpoint(std::shared_ptr<DeviceHandle> device, const EndpointSpec& spec)
      : device_(std::move(device)), spec_(spec) {}

  ~VerbsEndpoint() override {
    // Members release in reverse order of declaration: QPs, MR, CQ, buffer,
    // then (if last) the device handle. QPs must go before the CQ they use
    // and the MR before its memory.
  }

  absl::Status Init(const ibv_port_attr& port_attr, const GidEntry& gid) {
    active_mtu_ = hal::IbMtuToBytes(port_attr.active_mtu);
    gid_ = gid;
    const uint32_t qps = std::max<uint32_t>(1, spec_.qps);
    const uint32_t depth = std::max<uint32_t>(1, spec_.outstanding);
    RETURN_IF_ERROR(buffer_.Allocate(2 * static_cast<size_t>(spec_.size), spec_.numa_node, spec_.hugepages));
    std::memset(buffer_.data(), 0, buffer_.length());
    ibv_mr* mr = ibv_reg_mr(device_->pd(), buffer_.data(), buffer_.length(),
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (mr == nullptr) {
      int err = errno;
      return VerbsError(
          absl::StrCat("ibv_reg_mr of ", buffer_.length(), " bytes on ", device_->name(),
                       err == ENOMEM || err == EPERM ? " (RLIMIT_MEMLOCK too low?)" : ""),
          err);
    }
    mr_.reset(mr);
    const int cq_size = static_cast<int>(qps * depth + 16);
    ibv_cq* cq = ibv_create_cq(device_->context(), cq_size, nullptr, nullptr, 0);
    if (cq == nullptr) return VerbsError(absl::StrCat("ibv_create_cq on ", device_->name()), errno);
    cq_.reset(cq);

    std::random_device seed;
    std::mt19937 rng(seed());
    for (uint32_t i = 0; i < qps; ++i) {
      ibv_qp_init_attr init = {};
      init.send_cq = cq_.get();
      init.recv_cq = cq_.get();
      init.qp_type = IBV_QPT_RC;
      init.sq_sig_all = 0;
      init.cap.max_send_wr = depth;
      init.cap.max_recv_wr = 1;
      init.cap.max_send_sge = 1;
      init.cap.max_recv_sge = 1;
      // Small messages go inline (the data travels in the work request),
      // as perftest does; providers that refuse the size get none.
      init.cap.max_inline_data = spec_.size <= 256 ? spec_.size : 0;
      ibv_qp* qp = ibv_create_qp(device_->pd(), &init);
      if (qp == nullptr && init.cap.max_inline_data != 0) {
        init.cap.max_inline_data = 0;
        qp = ibv_create_qp(device_->pd(), &init);
      }
      if (qp == nullptr) {
        return VerbsError(absl::StrCat("ibv_create_qp (RC, depth ", depth, ") on ", device_->name()),
                          errno);
      }
      qps_.emplace_back(qp);
      max_inline_ = init.cap.max_inline_data;

      ibv_qp_attr attr = {};
      attr.qp_state = IBV_QPS_INIT;
      attr.pkey_index = 0;
      attr.port_num = static_cast<uint8_t>(spec_.port);
      attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
      if (int rc = ibv_modify_qp(qp, &attr,
                                 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
          rc != 0) {
        return VerbsError("ibv_modify_qp to INIT", rc);
      }

      roced::v1::QpEndpoint ep;
      ep.set_qpn(qp->qp_num);
      ep.set_psn(rng() & 0xffffff);
      ep.set_gid(std::string(reinterpret_cast<const char*>(gid.gid.data()), gid.gid.size()));
      ep.set_gid_index(gid.index);
      ep.set_addr(reinterpret_cast<uint64_t>(RecvArea()));
      ep.set_rkey(mr_->rkey);
      ep.set_length(spec_.size);
      ep.set_active_mtu(active_mtu_);
      local_.push_back(std::move(ep));
    }
    return absl::OkStatus();
  }

  const std::vector<roced::v1::QpEndpoint>& local() const override { return local_; }
  const std::string& device() const override { return device_->name(); }
  bool hugepages() const override { return buffer_.huge(); }

  absl::Status Connect(const std::vector<roced::v1::QpEndpoint>& remote,
                       uint32_t traffic_class) override {
    if (remote.size() != qps_.size()) {
      return ProbeError(absl::StatusCode::kInvalidArgument, kReasonPeerError,
                        absl::StrCat("peer offered ", remote.size(), " queue pair(s), ", qps_.size(),
                                     " needed"));
    }
    for (size_t i = 0; i < qps_.size(); ++i) {
      const roced::v1::QpEndpoint& r = remote[i];
      if (r.gid().size() != 16 || r.rkey() == 0 || r.length() < spec_.size) {
        return ProbeError(absl::StatusCode::kInvalidArgument, kReasonPeerError,
                          absl::StrCat("peer's queue pair ", i, " is unusable (gid ", r.gid().size(),
                                       " bytes, rkey ", r.rkey(), ", buffer ", r.length(), " bytes for ",
                                       spec_.size, "-byte messages)"));
      }
      ibv_qp_attr attr = {};
      attr.qp_state = IBV_QPS_RTR;
      attr.path_mtu = BytesToIbMtu(PathMtuBytes(active_mtu_, r.active_mtu()));
      attr.dest_qp_num = r.qpn();
      attr.rq_psn = r.psn() & 0xffffff;
      attr.max_dest_rd_atomic = 1;
      attr.min_rnr_timer = 12;
      attr.ah_attr.is_global = 1;
      std::memcpy(attr.ah_attr.grh.dgid.raw, r.gid().data(), 16);
      attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_.index);
      attr.ah_attr.grh.hop_limit = 64;
      attr.ah_attr.grh.traffic_class = static_cast<uint8_t>(traffic_class);
      attr.ah_attr.port_num = static_cast<uint8_t>(spec_.port);
      if (int rc = ibv_modify_qp(qps_[i].get(), &attr,
                                 IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                     IBV_QP_MIN_RNR_TIMER);
          rc != 0) {
        return VerbsError(absl::StrCat("ibv_modify_qp to RTR (path MTU ",
                                       PathMtuBytes(active_mtu_, r.active_mtu()), ", tclass ",
                                       traffic_class, ")"),
                          rc);
      }
      attr = {};
      attr.qp_state = IBV_QPS_RTS;
      // 4.096 us * 2^14 = 67 ms per attempt, 7 retries: a vanished peer
      // surfaces as "transport retry counter exceeded" within ~0.5 s.
      attr.timeout = 14;
      attr.retry_cnt = 7;
      attr.rnr_retry = 7;
      attr.sq_psn = local_[i].psn();
      attr.max_rd_atomic = 1;
      if (int rc = ibv_modify_qp(qps_[i].get(), &attr,
                                 IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
          rc != 0) {
        return VerbsError("ibv_modify_qp to RTS", rc);
      }
    }
    remote_ = remote;
    return absl::OkStatus();
  }

  absl::StatusOr<LatencyRun> RunLatency(const LatencyOptions& options,
                                        const std::atomic<bool>* cancel) override {
    RETURN_IF_ERROR(RequireConnected());
    LatencyRun run;
    run.rtt_ns.reserve(options.iterations);
    const Clock::time_point deadline = ClockDeadline(options.deadline);
    volatile uint8_t* in = RecvArea() + spec_.size - 1;
    uint8_t* out = SendArea() + spec_.size - 1;
    for (uint32_t i = 0; i < options.iterations; ++i) {
      const uint8_t value = ++sequence_;
      *out = value;
      const Clock::time_point t0 = Clock::now();
      const Clock::time_point rtt_deadline =
          std::min(deadline, t0 + absl::ToChronoNanoseconds(options.round_trip_timeout));
      RETURN_IF_ERROR(PostWrite(0, /*signaled=*/true));
      // As ib_write_lat: the send completion first (a failed write shows up
      // here), then the peer's write into our buffer.
      RETURN_IF_ERROR(WaitSignaled(rtt_deadline, cancel, i == 0));
      Backoff backoff(spec_.busy_poll);
      while (*in != value) {
        if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return Cancelled();
        if (Clock::now() > rtt_deadline) return TimedOut(i == 0, "the peer's write", options, i);
        RETURN_IF_ERROR(CheckNotRemoved());
        backoff.Pause();
      }
      RETURN_IF_ERROR(CheckNotRemoved());
      run.rtt_ns.push_back(Nanos(Clock::now() - t0));
    }
    return run;
  }

  absl::Status ServeLatency(const std::atomic<bool>* stop, absl::Duration idle) override {
    RETURN_IF_ERROR(RequireConnected());
    volatile uint8_t* in = RecvArea() + spec_.size - 1;
    uint8_t* out = SendArea() + spec_.size - 1;
    while (true) {
      const uint8_t expected = static_cast<uint8_t>(sequence_ + 1);
      Backoff backoff(spec_.busy_poll);
      const Clock::time_point idle_deadline = ClockDeadline(idle);
      while (*in != expected) {
        if (stop->load(std::memory_order_relaxed)) return absl::OkStatus();
        RETURN_IF_ERROR(CheckNotRemoved());
        if (Clock::now() > idle_deadline) {
          return ProbeError(absl::StatusCode::kDeadlineExceeded, kReasonTimeout,
                            absl::StrCat("no write from the initiator for ", absl::FormatDuration(idle), " after ",
                                         sequence_, " answered: it is gone without closing the endpoint"));
        }
        backoff.Pause();
      }
      *out = expected;
      RETURN_IF_ERROR(PostWrite(0, /*signaled=*/true));
      absl::Status done = WaitSignaled(ClockDeadline(absl::Seconds(5)), stop, false);
      if (stop->load()) return absl::OkStatus();
      RETURN_IF_ERROR(done);
      sequence_ = expected;
    }
  }

  absl::StatusOr<BandwidthRun> RunBandwidth(const BandwidthOptions& options,
                                            const std::atomic<bool>* cancel) override {
    RETURN_IF_ERROR(RequireConnected());
    BandwidthRunState st(options, qps_.size(), std::max<uint32_t>(1, spec_.outstanding), spec_.size);
    ibv_wc wcs[16];
    while (true) {
      const Clock::time_point now = Clock::now();
      if (st.counted && now > st.end) {
        return TimedOutBandwidth(st.completed == 0, "the counted messages");
      }
      const bool stopping = (!st.counted && now >= st.end) ||
                            (cancel != nullptr && cancel->load(std::memory_order_relaxed));
      if (now > st.drain_limit) {
        return TimedOutBandwidth(st.completed == 0, "outstanding writes to drain");
      }
      RETURN_IF_ERROR(CheckNotRemoved());
      RETURN_IF_ERROR(PostBandwidth(&st, stopping));
      int n = ibv_poll_cq(cq_.get(), 16, wcs);
      if (n < 0) return VerbsError("ibv_poll_cq", EIO);
      const Clock::time_point after = Clock::now();
      RETURN_IF_ERROR(st.Account(wcs, n, after));
      if (n > 0) {
        st.last_progress = after;
      } else if (after - st.last_progress > st.completion_timeout) {
        return TimedOutBandwidth(st.completed == 0, "a completion");
      }
      st.UpdatePeak(n, after);
      if (st.Drained(stopping)) break;
    }
    if (cancel != nullptr && cancel->load()) return Cancelled();
    st.run.elapsed =
        absl::Nanoseconds(Nanos(st.run.messages > 0 ? st.last_counted - st.start : st.end - st.start));
    return st.run;
  }

 private:
  uint8_t* RecvArea() const { return buffer_.data(); }
  uint8_t* SendArea() const { return buffer_.data() + spec_.size; }

  absl::Status RequireConnected() const {
    if (remote_.empty()) {
      return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonInternal,
                        "endpoint used before Connect");
    }
    return absl::OkStatus();
  }

  static absl::Status Cancelled() {
    return ProbeError(absl::StatusCode::kCancelled, kReasonCancelled, "probe cancelled");
  }

  static absl::Status TimedOut(bool first, absl::string_view what, const LatencyOptions& options,
                               uint32_t iteration) {
    return ProbeError(
        absl::StatusCode::kDeadlineExceeded, first ? kReasonConnectTimeout : kReasonTimeout,
        absl::StrCat("no ", what, " within ", absl::FormatDuration(options.round_trip_timeout),
                     " (iteration ", iteration + 1, " of ", options.iterations, ")"));
  }

  static absl::Status TimedOutBandwidth(bool first, absl::string_view what) {
    return ProbeError(absl::StatusCode::kDeadlineExceeded,
                      first ? kReasonConnectTimeout : kReasonTimeout,
                      absl::StrCat("timed out waiting for ", what));
  }

  absl::Status PostWrite(size_t qp, bool signaled, uint64_t wr_id = 0) {
    ibv_sge sge = {};
    sge.addr = reinterpret_cast<uint64_t>(SendArea());
    sge.length = spec_.size;
    sge.lkey = mr_->lkey;
    ibv_send_wr wr = {};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = (signaled ? IBV_SEND_SIGNALED : 0) |
                    (spec_.size <= max_inline_ ? IBV_SEND_INLINE : 0);
    wr.wr.rdma.remote_addr = remote_[qp].addr();
    wr.wr.rdma.rkey = remote_[qp].rkey();
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(qps_[qp].get(), &wr, &bad); rc != 0) {
      return VerbsError("ibv_post_send", rc);
    }
    return absl::OkStatus();
  }

  // Tops every QP up to its share of the writes in flight. When stopping,
  // only to the next signaled request, so the last one posted is always
  // signaled and everything drains. A counted run signals its last
  // request, whatever its place.
  absl::Status PostBandwidth(BandwidthRunState* st, bool stopping) {
    for (size_t q = 0; q < st->nqp; ++q) {
      while (st->in_flight[q] < st->per_qp && (!st->counted || st->posted[q] < st->quota[q]) &&
             (!stopping || st->unsignaled[q] != 0)) {
        const bool last = st->counted && st->posted[q] + 1 == st->quota[q];
        const bool signaled = st->unsignaled[q] + 1 == st->cq_mod || last;
        const uint64_t wr_id =
            signaled ? (static_cast<uint64_t>(st->unsignaled[q] + 1) << 32) | q : 0;
        RETURN_IF_ERROR(PostWrite(q, signaled, wr_id));
        ++st->posted[q];
        ++st->in_flight[q];
        st->unsignaled[q] = signaled ? 0 : st->unsignaled[q] + 1;
      }
    }
    return absl::OkStatus();
  }

  // Polls for one (signaled) completion.
  absl::Status WaitSignaled(Clock::time_point deadline, const std::atomic<bool>* cancel,
                            bool first) {
    ibv_wc wc;
    Backoff backoff(spec_.busy_poll);
    while (true) {
      int n = ibv_poll_cq(cq_.get(), 1, &wc);
      if (n < 0) return VerbsError("ibv_poll_cq", EIO);
      if (n == 1) {
        if (wc.status != IBV_WC_SUCCESS) return WcError(wc);
        return absl::OkStatus();
      }
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return Cancelled();
      if (Clock::now() > deadline) {
        return ProbeError(absl::StatusCode::kDeadlineExceeded,
                          first ? kReasonConnectTimeout : kReasonTimeout,
                          "no completion for an RDMA WRITE in time");
      }
      backoff.Pause();
    }
  }

  // device_unavailable once the device is being removed; looked at most
  // every 100 ms (a run's loops call it on every turn).
  absl::Status CheckNotRemoved() {
    const Clock::time_point now = Clock::now();
    if (now < next_removal_check_) return absl::OkStatus();
    next_removal_check_ = now + std::chrono::milliseconds(100);
    if (!device_->Removing()) return absl::OkStatus();
    return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                      absl::StrCat("RDMA device ", device_->name(), " is being removed (its uverbs device is gone)"));
  }

  // Declaration order is release order reversed: see the destructor.
  std::shared_ptr<DeviceHandle> device_;
  const EndpointSpec spec_;
  Buffer buffer_;
  std::unique_ptr<ibv_cq, CqDeleter> cq_;
  std::unique_ptr<ibv_mr, MrDeleter> mr_;
  std::vector<std::unique_ptr<ibv_qp, QpDeleter>> qps_;

  GidEntry gid_;
  uint32_t active_mtu_ = 0;
  uint32_t max_inline_ = 0;
  uint8_t sequence_ = 0;
  Clock::time_point next_removal_check_{};
  std::vector<roced::v1::QpEndpoint> local_;
  std::vector<roced::v1::QpEndpoint> remote_;
};

}  // namespace

VerbsEndpointFactory::VerbsEndpointFactory() = default;
VerbsEndpointFactory::~VerbsEndpointFactory() = default;

absl::StatusOr<std::shared_ptr<DeviceHandle>> VerbsEndpointFactory::Acquire(
    const std::string& device) {
  int num = 0;
  // Listed means its uverbs device still exists: removal deletes that
  // first, then waits for the open contexts to close.
  ibv_device** list = ibv_get_device_list(&num);
  if (list == nullptr) {
    return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                      absl::StrCat("no RDMA devices (ibv_get_device_list: ", std::strerror(errno), ")"));
  }
  ibv_device* found = nullptr;
  for (int i = 0; i < num; ++i) {
    if (device == ibv_get_device_name(list[i])) found = list[i];
  }
  if (found == nullptr) {
    ibv_free_device_list(list);
    devices_.erase(device);
    return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                      absl::StrCat("RDMA device ", device, " not found"));
  }
  auto it = devices_.find(device);
  if (it != devices_.end()) {
    std::shared_ptr<DeviceHandle> shared = it->second.lock();
    if (shared != nullptr && shared->DrainEvents()) {
      ibv_free_device_list(list);
      return shared;
    }
    if (shared != nullptr) {
      LOG_WARNING << "probe: " << device << " reported a fatal error; opening it again";
    }
    devices_.erase(it);
  }
  const std::string found_path = found->dev_path;
  ibv_context* context = ibv_open_device(found);
  const int open_errno = errno;
  ibv_free_device_list(list);
  if (context == nullptr) {
    return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                      absl::StrCat("ibv_open_device ", device, ": ", std::strerror(open_errno)));
  }
  // Async events are read without blocking, whenever the device is used.
  int flags = fcntl(context->async_fd, F_GETFL);
  if (flags < 0 || fcntl(context->async_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    LOG_WARNING << "probe: cannot make " << device << "'s async event fd non-blocking";
  }
  ibv_pd* pd = ibv_alloc_pd(context);
  if (pd == nullptr) {
    int err = errno;
    ibv_close_device(context);
    return VerbsError(absl::StrCat("ibv_alloc_pd on ", device), err);
  }
  auto handle = std::make_shared<DeviceHandle>(device, found_path, context, pd);
  devices_[device] = handle;
  LOG_DEBUG << "probe: opened " << device;
  return handle;
}

absl::StatusOr<std::unique_ptr<Endpoint>> VerbsEndpointFactory::Create(const EndpointSpec& spec) {
  if (spec.size == 0 || spec.port == 0 || spec.port > 255) {
    return ProbeError(absl::StatusCode::kInvalidArgument, kReasonInternal,
                      absl::StrCat("bad endpoint spec: size ", spec.size, ", port ", spec.port));
  }
  std::shared_ptr<DeviceHandle> handle;
  ibv_port_attr port_attr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ASSIGN_OR_RETURN(handle, Acquire(spec.device));
    if (int rc = ibv_query_port(handle->context(), static_cast<uint8_t>(spec.port), &port_attr);
        rc != 0) {
      // A removed device answers with an error: drop the context so the
      // next probe opens the device again (if it came back).
      devices_.erase(spec.device);
      return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                        absl::StrCat("ibv_query_port ", spec.device, "/", spec.port, ": ",
                                     std::strerror(rc)));
    }
  }
  if (port_attr.state != IBV_PORT_ACTIVE) {
    return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                      absl::StrCat(spec.device, "/", spec.port, " is not active (state ",
                                   ibv_port_state_str(port_attr.state), ")"));
  }
  uint32_t ifindex = 0;
  if (!spec.netdev.empty()) {
    ifindex = if_nametoindex(spec.netdev.c_str());
    if (ifindex == 0) {
      return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                        absl::StrCat("netdev ", spec.netdev, " of ", spec.device, " not found"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<GidEntry> table,
                   QueryGidTable(handle->context(), spec.port, port_attr.gid_tbl_len));
  absl::StatusOr<GidEntry> gid = SelectRoceV2Ipv4Gid(table, spec.port, ifindex, spec.ipv4);
  if (!gid.ok()) {
    return WithReason(absl::FailedPreconditionError(absl::StrCat(
                          spec.device, "/", spec.port,
                          spec.netdev.empty() ? "" : " (" + spec.netdev + ")", ": ",
                          gid.status().message())),
                      kReasonNoGid);
  }
  auto endpoint = std::make_unique<VerbsEndpoint>(handle, spec);
  RETURN_IF_ERROR(endpoint->Init(port_attr, *gid));
  return endpoint;
}

}  // namespace roced::probe
