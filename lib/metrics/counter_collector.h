// Prometheus collector for the RDMA port counters (sysfs counters/ and
// hw_counters/, every file found) and the per-priority PFC, pause and
// discard statistics of the ports' netdevs (ethtool). Values are read at
// scrape time; nothing is polled in the background, and a device or netdev
// that disappears stops being reported.
//
// Counters with a well-known meaning get one stable name across drivers;
// every other file is exported under one generic family with the file name
// in the `counter` label. All RDMA series carry device, port and netdev.
//
// | metric (all counters)                    | GetCounters name     | mlx5 hw_counters / counters                              | rxe hw_counters       |
// |------------------------------------------|----------------------|----------------------------------------------------------|-----------------------|
// | roced_rdma_cnp_sent_total                | cnp_sent             | np_cnp_sent                                              | -                     |
// | roced_rdma_cnp_handled_total             | cnp_handled          | rp_cnp_handled                                           | -                     |
// | roced_rdma_ecn_marked_packets_total      | ecn_marked_packets   | np_ecn_marked_roce_packets                               | -                     |
// | roced_rdma_out_of_sequence_total         | out_of_sequence      | out_of_sequence                                          | out_of_seq_request    |
// | roced_rdma_packet_sequence_errors_total  | packet_sequence_errors | packet_seq_err                                         | rcvd_seq_err          |
// | roced_rdma_local_ack_timeouts_total      | local_ack_timeouts   | local_ack_timeout_err                                    | -                     |
// | roced_rdma_rnr_nak_retries_total         | rnr_nak_retries      | rnr_nak_retry_err                                        | rcvd_rnr_err          |
// | roced_rdma_duplicate_requests_total      | duplicate_requests   | duplicate_request                                        | duplicate_request     |
// | roced_rdma_retransmits_total             | retransmits          | local_ack_timeout_err + packet_seq_err + implied_nak_seq_err | completer_retry_err |
// | roced_port_transmit_bytes_total          | transmit_bytes       | counters/port_xmit_data x 4                              | -                     |
// | roced_port_receive_bytes_total           | receive_bytes        | counters/port_rcv_data x 4                               | -                     |
// | roced_port_transmit_packets_total        | transmit_packets     | counters/port_xmit_packets                               | sent_pkts             |
// | roced_port_receive_packets_total         | receive_packets      | counters/port_rcv_packets                                | rcvd_pkts             |
//
// Semantics, so that one name means one thing on every driver:
// - out_of_sequence: packets the responder received with a PSN beyond the
//   expected one (it answers with a sequence-error NAK). Responder side.
// - packet_sequence_errors: sequence-error NAKs the requester received
//   (each makes it resend from the NAKed PSN). Requester side.
// - rnr_nak_retries: receiver-not-ready NAKs received by the requester,
//   which waits and retries (mlx5 counts those within the retry limit).
// - duplicate_requests: requests the responder received again (a resend of
//   something it had already executed).
// - retransmits: go-back-N episodes, i.e. times the requester went back and
//   resent from an unacknowledged PSN because its ACK timer expired or a NAK
//   or out-of-order read response told it packets were lost. rxe counts
//   exactly this (completer_retry_err). mlx5 has no such counter; each of
//   local_ack_timeout_err, packet_seq_err and implied_nak_seq_err counts
//   one cause of such an episode (within the retry limit), so their sum is
//   the same quantity. mlx5's roce_adp_retrans is deliberately not used: it
//   counts only resends made by the adaptive-retransmission feature, whose
//   overlap with local_ack_timeout_err the documentation leaves open; it is
//   exported under the generic family.
// - port bytes and packets: the PMA port counters; port_xmit_data and
//   port_rcv_data count 4-byte words, hence x 4. On a RoCE port mlx5 counts
//   RDMA traffic only. rxe has no PMA (no counters/ directory); its
//   sent_pkts/rcvd_pkts are its RoCE packets, the same quantity.
// A file that feeds a well-known metric alone is not repeated in the
// generic families; a file that is only part of a sum (implied_nak_seq_err)
// is, so no driver value is lost.
//
// Generic: roced_rdma_port_counters_total{counter} (counters/) and
// roced_rdma_hw_counters_total{counter} (hw_counters/).
//
// ethtool (labels netdev, and priority for the per-priority ones):
// | metric                                            | mlx5 statistic                | unit          |
// |---------------------------------------------------|-------------------------------|---------------|
// | roced_pfc_pause_frames_received_total             | rx_prio<N>_pause              | frames        |
// | roced_pfc_pause_frames_sent_total                 | tx_prio<N>_pause              | frames        |
// | roced_pfc_pause_received_duration_seconds_total   | rx_prio<N>_pause_duration     | us -> seconds |
// | roced_pfc_pause_sent_duration_seconds_total       | tx_prio<N>_pause_duration     | us -> seconds |
// | roced_pfc_pause_transitions_total                 | rx_prio<N>_pause_transition   | XOFF->XON     |
// | roced_netdev_priority_buffer_discards_total       | rx_prio<N>_buf_discard        | packets       |
// | roced_netdev_priority_congestion_discards_total   | rx_prio<N>_cong_discard       | packets       |
// | roced_netdev_priority_ecn_marked_packets_total    | rx_prio<N>_marked             | packets       |
// | roced_netdev_link_pause_frames_received_total     | rx_pause_ctrl_phy             | frames        |
// | roced_netdev_link_pause_frames_sent_total         | tx_pause_ctrl_phy             | frames        |
// | roced_netdev_receive_discards_total               | rx_discards_phy               | packets       |
// | roced_pfc_tx_pause_storm_warnings_total           | tx_pause_storm_warning_events | events        |
// | roced_pfc_tx_pause_storm_errors_total             | tx_pause_storm_error_events   | events        |
//
// Collect() runs on prometheus-cpp's HTTP threads; the sources it is given
// are thread-safe, and so is the ports function it must be given.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "hal/counter_files.h"
#include "hal/ethtool_stats.h"
#include "metrics/exposition.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "roced/v1/agent.pb.h"
#include "roced/v1/state.pb.h"

namespace roced::metrics {

// The netdev carrying an RDMA port's traffic (empty for an IB port).
struct PortNetdev {
  std::string device;
  uint32_t port = 0;
  std::string netdev;
};

// The (device, port, netdev) triples of discovered devices, for labels.
std::vector<PortNetdev> PortNetdevs(
    const google::protobuf::RepeatedPtrField<roced::v1::RdmaDevice>& devices);

// One netdev's PFC, pause and discard statistics (ParsePfcStatName's set).
struct NetdevStats {
  std::string netdev;
  std::vector<hal::EthtoolStat> stats;
};

// One row of the table above.
struct WellKnownCounter {
  const char* metric;
  const char* name;  // stable name in GetCounters
  const char* help;
  double scale;
  // Alternatives by driver, first present wins; the present files of the
  // winning alternative are summed.
  std::vector<std::vector<std::pair<hal::CounterSource, const char*>>> alternatives;
};
const std::vector<WellKnownCounter>& WellKnownCounters();

class CounterCollector : public prometheus::Collectable, public TextCollectable {
 public:
  using PortsFn = std::function<std::vector<PortNetdev>()>;
  // `files` must outlive the collector. `ethtool` may be null: then no
  // ethtool families (the agent passes null on a fixture sysfs tree, whose
  // netdev names mean nothing to the live kernel).
  CounterCollector(hal::CounterFiles* files, hal::NetdevStatsReader* ethtool, PortsFn ports)
      : files_(files), ethtool_(ethtool), ports_(std::move(ports)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;
  // What Expose(Collect()) writes, without building the families: the
  // scrape path. Thread-safe.
  void AppendText(std::string* out) const override;

  // The families for one reading (exposed for tests). Families without a
  // series are left out.
  static std::vector<prometheus::MetricFamily> Families(
      const std::vector<hal::PortCounterSet>& sets, const std::vector<PortNetdev>& ports,
      const std::vector<NetdevStats>& netdevs);
  // The same reading as exposition text, byte for byte what
  // Expose(Families(...)) writes. `scratch` holds per-family buffers a
  // caller may keep between calls.
  static void AppendText(const std::vector<hal::PortCounterSet>& sets,
                         const std::vector<PortNetdev>& ports,
                         const std::vector<NetdevStats>& netdevs,
                         std::vector<std::string>* scratch, std::string* out);

 private:
  // What a scrape keeps for the next one: the counter sets (rewritten in
  // place) and the family buffers (their sizes kept).
  struct Scratch {
    std::vector<hal::PortCounterSet> sets;
    std::vector<std::string> buffers;
  };

  hal::CounterFiles* files_;
  hal::NetdevStatsReader* ethtool_;
  PortsFn ports_;
  // One Scratch per scrape running at once (not per thread: civetweb has 32
  // workers, and any of them may serve a scrape).
  mutable std::mutex scratch_mu_;
  mutable std::vector<std::unique_ptr<Scratch>> scratch_pool_;
};

// Reads the ethtool statistics of each distinct netdev in `ports`, keeping
// the PFC, pause and discard ones. Netdevs that are gone or keep no
// statistics are left out.
std::vector<NetdevStats> ReadNetdevStats(hal::NetdevStatsReader* reader,
                                         const std::vector<PortNetdev>& ports);

// GetCounters' sets for one reading, without rates: per port and source the
// sysfs counters (stable names where one exists, values in the metric's
// unit), the derived sums in the set of their files, and per netdev the
// ethtool PFC, pause and discard statistics with their priority.
std::vector<roced::v1::CounterSet> BuildCounterSets(const std::vector<hal::PortCounterSet>& sets,
                                                    const std::vector<PortNetdev>& ports,
                                                    const std::vector<NetdevStats>& netdevs);

}  // namespace roced::metrics
