#include "probe/ud_port.h"

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "hal/verbs_devices.h"
#include "probe/reason.h"
#include "util/log.h"
#include "util/status_macros.h"

namespace roced::probe {
namespace {

// wr_id: bit 63 set for receives, then the QP (bits 32-47) and the slot.
constexpr uint64_t kRecvBit = uint64_t{1} << 63;
// rxe's vendor ID (RXE_VENDOR_ID).
constexpr uint32_t kRxeVendorId = 0xffffff;

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

absl::Status Verbs(absl::string_view what, int err) {
  return ProbeError(err == ENOMEM ? absl::StatusCode::kResourceExhausted : absl::StatusCode::kInternal,
                    kReasonLocalError, absl::StrCat(what, ": ", std::strerror(err)));
}

absl::Status CheckOptions(const UdPortOptions& o) {
  auto range = [](absl::string_view field, uint64_t v, uint64_t lo, uint64_t hi) {
    if (v >= lo && v <= hi) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("mesh UD port: ", field, " ", v, " is out of range [", lo, ", ", hi, "]"));
  };
  RETURN_IF_ERROR(range("qps", o.qps, 1, kMaxUdQps));
  RETURN_IF_ERROR(range("recv_depth", o.recv_depth, 1, kMaxUdDepth));
  RETURN_IF_ERROR(range("send_depth", o.send_depth, 1, kMaxUdDepth));
  RETURN_IF_ERROR(range("max_message", o.max_message, 64, kMaxUdMessage));
  return range("port", o.port, 1, 255);
}

// The sender's GID from a receive buffer's GRH: for RoCE v2 over IPv4 the
// IPv4 header fills its last 20 bytes (version nibble 4), else it is an
// IPv6 header whose source address is bytes 8-23.
std::array<uint8_t, 16> GrhSourceGid(const uint8_t* grh, uint8_t* tclass) {
  std::array<uint8_t, 16> gid{};
  if ((grh[20] >> 4) == 4) {
    gid[10] = 0xff;
    gid[11] = 0xff;
    std::memcpy(gid.data() + 12, grh + 20 + 12, 4);
    *tclass = grh[20 + 1];
  } else {
    std::memcpy(gid.data(), grh + 8, 16);
    *tclass = static_cast<uint8_t>(((grh[0] & 0x0f) << 4) | (grh[1] >> 4));
  }
  return gid;
}

}  // namespace

uint16_t RxeSourcePort(uint32_t qpn) {
  // hash_32(val, 14): the top 14 bits of val * GOLDEN_RATIO_32.
  const uint32_t hash = (qpn * 0x61C88647u) >> (32 - 14);
  return static_cast<uint16_t>(0xC000 + (hash & 0x3fff));
}

uint16_t FlowLabelSourcePort(uint32_t flow_label) {
  const uint32_t fl = flow_label & 0xfffff;
  return static_cast<uint16_t>(((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | 0xC000);
}

uint32_t MeshFlowLabel(uint32_t index) {
  // Spread over the 20 bits so that consecutive indexes differ in the
  // bits every hash reads; never 0.
  const uint32_t label = ((index + 1) * 0x9E3B5u) & 0xfffff;
  return label == 0 ? 1 : label;
}

absl::StatusOr<std::unique_ptr<UdPort>> UdPort::Open(const UdPortOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  std::unique_ptr<UdPort> port(new UdPort());
  port->options_ = options;
  int num = 0;
  ibv_device** list = ibv_get_device_list(&num);
  if (list == nullptr) {
    return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                      absl::StrCat("no RDMA devices (ibv_get_device_list: ", std::strerror(errno), ")"));
  }
  for (int i = 0; i < num && port->context_ == nullptr; ++i) {
    if (options.device != ibv_get_device_name(list[i])) continue;
    port->uverbs_path_ = list[i]->dev_path;
    port->context_ = ibv_open_device(list[i]);
  }
  const int open_errno = errno;
  ibv_free_device_list(list);
  if (port->context_ == nullptr) {
    return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                      port->uverbs_path_.empty()
                          ? absl::StrCat("RDMA device ", options.device, " not found")
                          : absl::StrCat("ibv_open_device ", options.device, ": ", std::strerror(open_errno)));
  }
  const int flags = fcntl(port->context_->async_fd, F_GETFL);
  if (flags >= 0) fcntl(port->context_->async_fd, F_SETFL, flags | O_NONBLOCK);
  ibv_port_attr port_attr;
  if (int rc = ibv_query_port(port->context_, static_cast<uint8_t>(options.port), &port_attr); rc != 0) {
    return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                      absl::StrCat("ibv_query_port ", options.device, "/", options.port, ": ", std::strerror(rc)));
  }
  if (port_attr.state != IBV_PORT_ACTIVE) {
    return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                      absl::StrCat(options.device, "/", options.port, " is not active (state ",
                                   ibv_port_state_str(port_attr.state), ")"));
  }
  RETURN_IF_ERROR(port->Init(port_attr));
  return port;
}

absl::Status UdPort::Init(const ibv_port_attr& port_attr) {
  active_mtu_ = hal::IbMtuToBytes(port_attr.active_mtu);
  uint32_t ifindex = 0;
  if (!options_.netdev.empty() && (ifindex = if_nametoindex(options_.netdev.c_str())) == 0) {
    return ProbeError(absl::StatusCode::kFailedPrecondition, kReasonDeviceUnavailable,
                      absl::StrCat("netdev ", options_.netdev, " of ", options_.device, " not found"));
  }
  ASSIGN_OR_RETURN(std::vector<GidEntry> table,
                   QueryGidTable(context_, options_.port, port_attr.gid_tbl_len));
  absl::StatusOr<GidEntry> gid = SelectRoceV2Ipv4Gid(table, options_.port, ifindex, options_.ipv4);
  if (!gid.ok()) {
    return WithReason(absl::FailedPreconditionError(absl::StrCat(options_.device, "/", options_.port, ": ",
                                                                 gid.status().message())),
                      kReasonNoGid);
  }
  gid_ = *gid;
  pd_ = ibv_alloc_pd(context_);
  if (pd_ == nullptr) return Verbs(absl::StrCat("ibv_alloc_pd on ", options_.device), errno);
  const size_t recv_bytes = size_t{options_.qps} * options_.recv_depth * (kGrhBytes + options_.max_message);
  buffer_length_ = recv_bytes + size_t{options_.send_depth} * options_.max_message;
  void* p = mmap(nullptr, buffer_length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    buffer_length_ = 0;
    return Verbs(absl::StrCat("mmap ", recv_bytes, " bytes"), errno);
  }
  buffer_ = static_cast<uint8_t*>(p);
  std::memset(buffer_, 0, buffer_length_);
  // An int, not the enum: rdma-core's ibv_reg_mr macro ANDs the flags with
  // a flag of another enum type, which clang warns about.
  const int access = IBV_ACCESS_LOCAL_WRITE;
  mr_ = ibv_reg_mr(pd_, buffer_, buffer_length_, access);
  if (mr_ == nullptr) {
    const int err = errno;
    return Verbs(absl::StrCat("ibv_reg_mr of ", buffer_length_, " bytes on ", options_.device,
                              err == ENOMEM || err == EPERM ? " (RLIMIT_MEMLOCK too low?)" : ""),
                 err);
  }
  RETURN_IF_ERROR(CreateCq());
  RETURN_IF_ERROR(CreateQps());
  send_cookie_.assign(options_.send_depth, 0);
  send_posted_ns_.assign(options_.send_depth, 0);
  for (size_t i = options_.send_depth; i > 0; --i) free_sends_.push_back(i - 1);
  return absl::OkStatus();
}

absl::Status UdPort::CreateCq() {
  ibv_device_attr_ex attr = {};
  if (ibv_query_device_ex(context_, nullptr, &attr) == 0) {
    core_clock_khz_ = attr.hca_core_clock;
    rxe_ = attr.orig_attr.vendor_id == kRxeVendorId;
  }
  channel_ = ibv_create_comp_channel(context_);
  if (channel_ == nullptr) return Verbs(absl::StrCat("ibv_create_comp_channel on ", options_.device), errno);
  const int flags = fcntl(channel_->fd, F_GETFL);
  if (flags < 0 || fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Verbs("fcntl(O_NONBLOCK) on the completion channel", errno);
  }
  const uint32_t cqe = options_.qps * options_.recv_depth + options_.send_depth + 16;
  ibv_cq_init_attr_ex init = {};
  init.cqe = cqe;
  init.channel = channel_;
  init.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_SRC_QP;
  if (core_clock_khz_ != 0) {
    ibv_cq_init_attr_ex with_ts = init;
    with_ts.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    cq_ex_ = ibv_create_cq_ex(context_, &with_ts);
    nic_timestamps_ = cq_ex_ != nullptr;
  }
  // Without timestamps, the plain CQ: rxe's extended-poll calls advance the
  // consumer index twice when ibv_end_poll follows an ibv_next_poll that
  // found nothing (the order the verbs man page shows), which replays old
  // completions.
  if (cq_ex_ != nullptr) {
    cq_ = ibv_cq_ex_to_cq(cq_ex_);
  } else {
    cq_ = ibv_create_cq(context_, static_cast<int>(cqe), nullptr, channel_, 0);
    if (cq_ == nullptr) return Verbs(absl::StrCat("ibv_create_cq on ", options_.device), errno);
  }
  LOG_DEBUG << "mesh: " << options_.device << "/" << options_.port << " completion timestamps "
            << (nic_timestamps_ ? "from the NIC" : "from the host clock");
  return absl::OkStatus();
}

absl::Status UdPort::CreateQps() {
  for (uint32_t i = 0; i < options_.qps; ++i) {
    ibv_qp_init_attr init = {};
    init.send_cq = cq_;
    init.recv_cq = cq_;
    init.qp_type = IBV_QPT_UD;
    init.sq_sig_all = 1;
    init.cap.max_send_wr = options_.send_depth;
    init.cap.max_recv_wr = options_.recv_depth;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(pd_, &init);
    if (qp == nullptr) return Verbs(absl::StrCat("ibv_create_qp (UD) on ", options_.device), errno);
    qps_.push_back(qp);
    ibv_qp_attr attr = {};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = static_cast<uint8_t>(options_.port);
    attr.qkey = kMeshQkey;
    if (int rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY); rc != 0) {
      return Verbs("ibv_modify_qp UD to INIT", rc);
    }
    for (size_t slot = 0; slot < options_.recv_depth; ++slot) RETURN_IF_ERROR(PostRecv(i, slot));
    attr = {};
    attr.qp_state = IBV_QPS_RTR;
    if (int rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE); rc != 0) return Verbs("ibv_modify_qp UD to RTR", rc);
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = 0;
    if (int rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN); rc != 0) {
      return Verbs("ibv_modify_qp UD to RTS", rc);
    }
  }
  if (int rc = ibv_req_notify_cq(cq_, 0); rc != 0) return Verbs("ibv_req_notify_cq", rc);
  cq_armed_ = true;
  return absl::OkStatus();
}

UdPort::~UdPort() {
  for (auto& [key, ah] : ahs_) ibv_destroy_ah(ah);
  for (ibv_qp* qp : qps_) ibv_destroy_qp(qp);
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
  if (mr_ != nullptr) ibv_dereg_mr(mr_);
  if (buffer_ != nullptr) munmap(buffer_, buffer_length_);
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (context_ != nullptr) ibv_close_device(context_);
}

uint32_t UdPort::qpn(size_t qp) const { return qp < qps_.size() ? qps_[qp]->qp_num : 0; }

uint16_t UdPort::SourcePort(size_t qp, uint32_t flow_label) const {
  return rxe_ ? RxeSourcePort(qpn(qp)) : FlowLabelSourcePort(flow_label);
}

uint8_t* UdPort::RecvSlot(size_t qp, size_t slot) const {
  return buffer_ + (qp * options_.recv_depth + slot) * (kGrhBytes + options_.max_message);
}

uint8_t* UdPort::SendSlot(size_t slot) const {
  const size_t recv_bytes = size_t{options_.qps} * options_.recv_depth * (kGrhBytes + options_.max_message);
  return buffer_ + recv_bytes + slot * options_.max_message;
}

absl::Status UdPort::PostRecv(size_t qp, size_t slot) {
  ibv_sge sge = {};
  sge.addr = reinterpret_cast<uintptr_t>(RecvSlot(qp, slot));
  sge.length = kGrhBytes + options_.max_message;
  sge.lkey = mr_->lkey;
  ibv_recv_wr wr = {};
  wr.wr_id = kRecvBit | (uint64_t{qp} << 32) | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qps_[qp], &wr, &bad); rc != 0) return Verbs("ibv_post_recv (UD)", rc);
  return absl::OkStatus();
}

absl::StatusOr<ibv_ah*> UdPort::AddressHandle(const std::array<uint8_t, 16>& gid, uint8_t tclass,
                                              uint32_t flow_label) {
  auto key = std::make_tuple(gid, tclass, flow_label);
  if (auto it = ahs_.find(key); it != ahs_.end()) return it->second;
  if (ahs_.size() >= kMaxAddressHandles && in_flight_ == 0) {
    for (auto& [k, ah] : ahs_) ibv_destroy_ah(ah);
    ahs_.clear();
  }
  ibv_ah_attr attr = {};
  attr.is_global = 1;
  attr.port_num = static_cast<uint8_t>(options_.port);
  std::memcpy(attr.grh.dgid.raw, gid.data(), 16);
  attr.grh.sgid_index = static_cast<uint8_t>(gid_.index);
  attr.grh.hop_limit = 64;
  attr.grh.traffic_class = tclass;
  attr.grh.flow_label = flow_label & 0xfffff;
  ibv_ah* ah = ibv_create_ah(pd_, &attr);
  if (ah == nullptr) return Verbs("ibv_create_ah", errno);
  ahs_.emplace(key, ah);
  return ah;
}

absl::Status UdPort::Send(size_t qp, const UdAddress& to, uint8_t dscp, uint32_t flow_label,
                          absl::Span<const uint8_t> payload, uint64_t cookie) {
  if (qp >= qps_.size() || payload.size() > options_.max_message || dscp > 63) {
    return absl::InvalidArgumentError(absl::StrCat("mesh send: QP ", qp, " of ", qps_.size(), ", ",
                                                   payload.size(), " bytes (at most ", options_.max_message,
                                                   "), DSCP ", dscp));
  }
  if (free_sends_.empty()) {
    return absl::ResourceExhaustedError(absl::StrCat("mesh send: ", options_.send_depth, " sends in flight"));
  }
  ASSIGN_OR_RETURN(ibv_ah * ah, AddressHandle(to.gid, static_cast<uint8_t>(dscp << 2), flow_label));
  const size_t slot = free_sends_.back();
  std::memcpy(SendSlot(slot), payload.data(), payload.size());
  ibv_sge sge = {};
  sge.addr = reinterpret_cast<uintptr_t>(SendSlot(slot));
  sge.length = static_cast<uint32_t>(payload.size());
  sge.lkey = mr_->lkey;
  ibv_send_wr wr = {};
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = to.qpn;
  wr.wr.ud.remote_qkey = kMeshQkey;
  ibv_send_wr* bad = nullptr;
  send_posted_ns_[slot] = MonotonicNs();
  if (int rc = ibv_post_send(qps_[qp], &wr, &bad); rc != 0) return Verbs("ibv_post_send (UD)", rc);
  free_sends_.pop_back();
  send_cookie_[slot] = cookie;
  ++in_flight_;
  return absl::OkStatus();
}

int64_t CyclesToNs(uint64_t cycles, uint64_t khz) {
  // cycles * 1e6 / kHz, split so that no product overflows.
  if (khz == 0) return 0;
  return static_cast<int64_t>(cycles / khz * 1'000'000 + cycles % khz * 1'000'000 / khz);
}

int64_t UdPort::NicNs(uint64_t raw) const { return CyclesToNs(raw, core_clock_khz_); }

int UdPort::DrainCq(std::vector<Completion>* out) {
  const int64_t now = MonotonicNs();
  if (cq_ex_ == nullptr) {
    ibv_wc wcs[32];
    int n = ibv_poll_cq(cq_, 32, wcs);
    for (int i = 0; i < n; ++i) {
      out->push_back({wcs[i].wr_id, wcs[i].status, wcs[i].opcode, wcs[i].byte_len, wcs[i].src_qp, now, false});
    }
    return n;
  }
  ibv_poll_cq_attr attr = {};
  int rc = ibv_start_poll(cq_ex_, &attr);
  if (rc == ENOENT) return 0;
  if (rc != 0) return -rc;
  int n = 0;
  while (true) {
    Completion c;
    c.wr_id = cq_ex_->wr_id;
    c.status = cq_ex_->status;
    c.opcode = ibv_wc_read_opcode(cq_ex_);
    c.byte_len = ibv_wc_read_byte_len(cq_ex_);
    c.src_qp = ibv_wc_read_src_qp(cq_ex_);
    c.stamp_ns = now;
    if (nic_timestamps_) {
      c.stamp_ns = NicNs(ibv_wc_read_completion_ts(cq_ex_));
      c.nic_stamp = true;
    }
    out->push_back(c);
    // The entry just read stays current until the next ibv_next_poll or
    // ibv_end_poll consumes it: stop before reading one more than wanted.
    if (++n >= 64 || ibv_next_poll(cq_ex_) != 0) break;
  }
  ibv_end_poll(cq_ex_);
  return n;
}

void UdPort::Deliver(const Completion& c, const std::function<void(const UdReceived&)>& on_receive,
                     const std::function<void(const UdSent&)>& on_sent) {
  if ((c.wr_id & kRecvBit) == 0) {
    const size_t slot = static_cast<size_t>(c.wr_id);
    if (slot >= send_cookie_.size()) return;
    UdSent sent;
    sent.cookie = send_cookie_[slot];
    sent.nic_stamp = c.nic_stamp;
    sent.stamp_ns = c.nic_stamp ? c.stamp_ns : send_posted_ns_[slot];
    if (c.status != IBV_WC_SUCCESS) {
      sent.status = ProbeError(absl::StatusCode::kUnavailable, kReasonLocalError,
                               absl::StrCat("UD send completed with ", ibv_wc_status_str(c.status)));
    }
    free_sends_.push_back(slot);
    --in_flight_;
    if (on_sent) on_sent(sent);
    return;
  }
  const size_t qp = static_cast<size_t>((c.wr_id >> 32) & 0xffff);
  const size_t slot = static_cast<size_t>(c.wr_id & 0xffffffff);
  if (qp >= qps_.size() || slot >= options_.recv_depth) return;
  if (c.status == IBV_WC_SUCCESS && c.byte_len >= kGrhBytes && on_receive) {
    const uint8_t* data = RecvSlot(qp, slot);
    UdReceived r;
    r.qp = qp;
    r.payload = absl::MakeConstSpan(data + kGrhBytes, c.byte_len - kGrhBytes);
    r.from.gid = GrhSourceGid(data, &r.traffic_class);
    r.from.qpn = c.src_qp;
    r.stamp_ns = c.stamp_ns;
    r.nic_stamp = c.nic_stamp;
    on_receive(r);
  }
  // A receive flushed with an error (the QP going down) is not posted again.
  if (c.status == IBV_WC_SUCCESS) {
    if (absl::Status st = PostRecv(qp, slot); !st.ok()) {
      LOG_WARNING << "mesh: " << st.message();
    }
  }
}

absl::StatusOr<size_t> UdPort::Poll(absl::Duration timeout, const std::function<void(const UdReceived&)>& on_receive,
                                    const std::function<void(const UdSent&)>& on_sent) {
  std::vector<Completion> batch;
  size_t handled = 0;
  // What is already in the CQ first; wait only when it is empty.
  int n = DrainCq(&batch);
  if (n == 0) {
    pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {context_->async_fd, POLLIN, 0}};
    const int64_t ms = std::max<int64_t>(0, absl::ToInt64Milliseconds(timeout));
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(ms, 60'000)));
    if (ready < 0 && errno != EINTR) return Verbs("poll on the completion channel", errno);
    if (ready > 0 && (fds[1].revents & POLLIN) != 0) Removing();  // reads the async events
    ibv_cq* ev_cq = nullptr;
    void* ev_ctx = nullptr;
    while (ibv_get_cq_event(channel_, &ev_cq, &ev_ctx) == 0) {
      ibv_ack_cq_events(ev_cq, 1);
      cq_armed_ = false;
    }
    if (!cq_armed_) {
      if (int rc = ibv_req_notify_cq(cq_, 0); rc != 0) return Verbs("ibv_req_notify_cq", rc);
      cq_armed_ = true;
    }
    n = DrainCq(&batch);
  }
  if (n < 0) return Verbs("polling the completion queue", -n);
  for (const Completion& c : batch) {
    Deliver(c, on_receive, on_sent);
    ++handled;
  }
  if (fatal_) {
    return ProbeError(absl::StatusCode::kUnavailable, kReasonDeviceUnavailable,
                      absl::StrCat(options_.device, " reported a fatal error"));
  }
  return handled;
}

bool UdPort::Removing() {
  ibv_async_event event;
  while (ibv_get_async_event(context_, &event) == 0) {
    if (event.event_type == IBV_EVENT_DEVICE_FATAL || event.event_type == IBV_EVENT_PORT_ERR) fatal_ = true;
    ibv_ack_async_event(&event);
  }
  return fatal_ || (!uverbs_path_.empty() && ::access(uverbs_path_.c_str(), F_OK) != 0);
}

std::array<int, 2> UdPort::WaitFds() const { return {channel_->fd, context_->async_fd}; }

}  // namespace roced::probe
