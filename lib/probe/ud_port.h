// The fleet mesh's transport on one RDMA port: unreliable
// datagram (UD) queue pairs that both send probes and answer them, so loss
// shows as loss instead of hiding behind RC's retransmission, and one
// queue pair serves every peer (no connection set-up per probe).
//
// - Several QPs per port (`qps`): a driver that derives the RoCE v2 UDP
//   source port from the QPN (rxe) gives each QP a source port of its own,
//   so rotating the QP rotates the ECMP path. Each send also carries a GRH
//   flow label, from which drivers that honour it (mlx5) take the source
//   port instead. SourcePort() says which port a (QP, flow label) leaves
//   from, for the lost probes' traceroute lead.
// - One completion queue for every QP, waited on through a completion
//   channel, so an idle port costs no CPU.
// - Completion timestamps from the NIC when the device offers them
//   (ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP and a known
//   core clock); else the host's monotonic clock, read when a send is
//   posted and when a completion is polled. nic_timestamps() says which.
// - Address handles are cached per (GID, traffic class, flow label), at
//   most kMaxAddressHandles (then the cache is emptied once no send that
//   uses one is in flight).
//
// The port holds a device context for as long as it is open: a driver
// that cannot disassociate contexts (rxe) waits for it to close before it
// removes the device, so the owner must close the port once Removing()
// turns true (the mesh runtime checks it on every wake-up).
//
// Not thread-safe: one thread sends and polls.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "probe/gid.h"

namespace roced::probe {

// The Q_Key every mesh responder uses ("RCMP" without the high bit, which
// would make it a controlled Q_Key only privileged senders may use).
inline constexpr uint32_t kMeshQkey = 0x52434d50;

struct UdPortOptions {
  std::string device;
  uint32_t port = 1;
  std::string netdev;   // the RoCE netdev; "" any
  std::string ipv4;     // the GID's address; "" the lowest-index RoCE v2 IPv4 GID
  uint32_t qps = 4;           // 1..kMaxUdQps
  uint32_t recv_depth = 64;   // receive buffers per QP, 1..kMaxUdDepth
  uint32_t send_depth = 128;  // sends in flight on the port, 1..kMaxUdDepth
  uint32_t max_message = 4096;  // largest datagram payload, 64..kMaxUdMessage
};
inline constexpr uint32_t kMaxUdQps = 64;
inline constexpr uint32_t kMaxUdDepth = 4096;
inline constexpr uint32_t kMaxUdMessage = 9000;
inline constexpr size_t kMaxAddressHandles = 4096;
// A UD receive buffer starts with the 40-byte GRH (for RoCE v2 over IPv4
// its last 20 bytes are the IPv4 header).
inline constexpr uint32_t kGrhBytes = 40;

// Where a datagram goes: the peer's GID and UD QPN (its Q_Key is kMeshQkey).
struct UdAddress {
  std::array<uint8_t, 16> gid{};
  uint32_t qpn = 0;
};

struct UdReceived {
  size_t qp = 0;  // which of this port's QPs it arrived on
  absl::Span<const uint8_t> payload;  // valid during the callback only
  UdAddress from;                     // sender's GID and QPN
  uint8_t traffic_class = 0;          // from the GRH (DSCP << 2 | ECN)
  int64_t stamp_ns = 0;
  bool nic_stamp = false;
};

struct UdSent {
  uint64_t cookie = 0;  // as given to Send
  absl::Status status;  // the work completion's status
  int64_t stamp_ns = 0; // when it left (NIC stamp) or was posted (host)
  bool nic_stamp = false;
};

// The UDP source port rxe gives a QP: 0xC000 plus 14 bits of hash_32(qpn).
uint16_t RxeSourcePort(uint32_t qpn);
// The UDP source port a GRH flow label maps to (the kernel's and
// rdma-core's rdma_flow_label_to_udp_sport).
uint16_t FlowLabelSourcePort(uint32_t flow_label);
// A completion timestamp in NIC core-clock cycles as nanoseconds, for a
// clock of `khz` (ibv_device_attr_ex.hca_core_clock), without overflow for
// any 64-bit count.
int64_t CyclesToNs(uint64_t cycles, uint64_t khz);
// The flow label used for flow index `index` (never 0: 0 means "none").
uint32_t MeshFlowLabel(uint32_t index);

class UdPort {
 public:
  // Opens the device, finds the port's RoCE v2 IPv4 GID and brings up the
  // QPs with every receive buffer posted. Errors carry probe reasons
  // (device_unavailable, no_gid, local_error); INVALID_ARGUMENT names an
  // option out of range.
  static absl::StatusOr<std::unique_ptr<UdPort>> Open(const UdPortOptions& options);
  ~UdPort();
  UdPort(const UdPort&) = delete;
  UdPort& operator=(const UdPort&) = delete;

  const UdPortOptions& options() const { return options_; }
  size_t qps() const { return qps_.size(); }
  uint32_t qpn(size_t qp) const;
  const GidEntry& gid() const { return gid_; }
  uint32_t active_mtu() const { return active_mtu_; }
  bool nic_timestamps() const { return nic_timestamps_; }
  // The UDP source port a datagram from `qp` with `flow_label` leaves from.
  uint16_t SourcePort(size_t qp, uint32_t flow_label) const;
  size_t in_flight() const { return in_flight_; }

  // Posts one datagram from QP `qp` to `to`, with traffic class dscp << 2
  // and the flow label; `payload` is copied. RESOURCE_EXHAUSTED when
  // send_depth sends are in flight; INVALID_ARGUMENT for a payload over
  // max_message or a QP out of range. The completion comes to Poll's
  // on_sent with `cookie`.
  absl::Status Send(size_t qp, const UdAddress& to, uint8_t dscp, uint32_t flow_label,
                    absl::Span<const uint8_t> payload, uint64_t cookie);

  // Waits up to `timeout` for completions and hands each over: datagrams
  // to on_receive (the buffer is posted again afterwards), sends to
  // on_sent. Returns how many it handled. An error when the device failed
  // (the port must be closed and opened again).
  absl::StatusOr<size_t> Poll(absl::Duration timeout, const std::function<void(const UdReceived&)>& on_receive,
                              const std::function<void(const UdSent&)>& on_sent);

  // The device is being removed (its uverbs node is gone), or reported a
  // fatal error: close the port.
  bool Removing();

  // The descriptors Poll waits on (the completion channel, the device's
  // async events), for a caller that waits on several ports at once and
  // then calls Poll with a zero timeout on each.
  std::array<int, 2> WaitFds() const;

 private:
  UdPort() = default;
  struct Completion {
    uint64_t wr_id = 0;
    ibv_wc_status status = IBV_WC_SUCCESS;
    ibv_wc_opcode opcode = IBV_WC_SEND;
    uint32_t byte_len = 0;
    uint32_t src_qp = 0;
    int64_t stamp_ns = 0;
    bool nic_stamp = false;
  };
  absl::Status Init(const ibv_port_attr& port_attr);
  absl::Status CreateCq();
  absl::Status CreateQps();
  absl::Status PostRecv(size_t qp, size_t slot);
  absl::StatusOr<ibv_ah*> AddressHandle(const std::array<uint8_t, 16>& gid, uint8_t tclass,
                                        uint32_t flow_label);
  int DrainCq(std::vector<Completion>* out);
  void Deliver(const Completion& c, const std::function<void(const UdReceived&)>& on_receive,
               const std::function<void(const UdSent&)>& on_sent);
  int64_t NicNs(uint64_t raw) const;
  uint8_t* RecvSlot(size_t qp, size_t slot) const;
  uint8_t* SendSlot(size_t slot) const;

  UdPortOptions options_;
  std::string uverbs_path_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq_ex* cq_ex_ = nullptr;  // when the provider has ibv_create_cq_ex
  ibv_cq* cq_ = nullptr;        // the CQ either way
  bool cq_armed_ = false;
  std::vector<ibv_qp*> qps_;
  uint8_t* buffer_ = nullptr;
  size_t buffer_length_ = 0;
  ibv_mr* mr_ = nullptr;
  GidEntry gid_;
  uint32_t active_mtu_ = 0;
  bool rxe_ = false;
  bool nic_timestamps_ = false;
  uint64_t core_clock_khz_ = 0;
  bool fatal_ = false;
  // Sends in flight: slot -> cookie, and the free slots.
  std::vector<uint64_t> send_cookie_;
  std::vector<int64_t> send_posted_ns_;
  std::vector<size_t> free_sends_;
  size_t in_flight_ = 0;
  std::map<std::tuple<std::array<uint8_t, 16>, uint8_t, uint32_t>, ibv_ah*> ahs_;
};

}  // namespace roced::probe
