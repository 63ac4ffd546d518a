// NodeIo on the running kernel: rtnetlink for MTU, DCB netlink for the DSCP
// app table, ETS, PFC and the port buffers, the ethtool ioctl for PFC storm
// prevention, sysfs for ECN enables and hugepages, sysfs or debugfs for the
// DCQCN parameters, configfs rdma_cm for the default RoCE mode and ToS. Each setter is one kernel
// surface; which field uses which is the field table's business
// (fields.h), so nothing here switches over fields.
//
// Owns its HAL objects (the netlink sockets of LinkMtu and the Dcb
// among them). Used from one thread at a time, as NodeIo says.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "hal/congestion_files.h"
#include "hal/dcb_netlink.h"
#include "hal/ecn_files.h"
#include "hal/ethtool_tunable.h"
#include "hal/driver_profile.h"
#include "hal/ethtool_info.h"
#include "hal/hugepage_pools.h"
#include "hal/link_mtu.h"
#include "hal/rdma_cm.h"
#include "reconcile/apply.h"

namespace roced::reconcile {

class LinuxNodeIo : public NodeIo {
 public:
  // `on_link_toggle` (may be empty) is called with the netdev before a write
  // that mlx5 answers with a link toggle (a pfc_en change:
  // mlx5e_dcbnl_ieee_setpfc), so the carrier changes it causes are not
  // taken for flaps. Called on the applying thread; must be thread-safe.
  // `dcb` (null: DCB netlink) is where DCB state is read and written: a
  // fixture tree's files (hal::DcbFixtureFiles) where no kernel holds the
  // netdevs.
  // `info` is where the netdevs' drivers are read (null: nowhere, for a
  // fixture tree without driver lines, whose netdev names the host may
  // share).
  explicit LinuxNodeIo(hal::Paths paths, std::function<void(const std::string& netdev)> on_link_toggle = {},
                       std::unique_ptr<hal::Dcb> dcb = nullptr,
                       std::unique_ptr<hal::EthtoolInfo> info = std::make_unique<hal::EthtoolInfo>())
      : dcb_(dcb != nullptr ? std::move(dcb) : std::make_unique<hal::DcbNetlink>()),
        info_(std::move(info)),
        ecn_(paths),
        congestion_(paths),
        rdma_cm_(paths),
        hugepages_(std::move(paths)),
        on_link_toggle_(std::move(on_link_toggle)) {}

  InterfaceObserved ObserveInterface(const Target& target) override;
  std::optional<uint64_t> ObserveHugepages(const HugepagePool& pool) override;

  absl::Status SetHugepages(const HugepagePool& pool, uint64_t count) override;
  absl::Status SetMtu(const Target& target, uint32_t mtu) override;
  absl::Status SetDcbxHost(const Target& t, bool host) override;
  absl::Status SetDscp(const Target& target, const DscpMap& from, const DscpMap& to) override;
  absl::Status SetEts(const Target& target, const Ets& ets) override;
  absl::Status SetPfc(const Target& target, const Pfc& pfc) override;
  absl::Status SetEcn(const Target& target, hal::EcnRole role, uint8_t from, uint8_t to) override;
  absl::Status SetRoceMode(const Target& target, roced::v1::RoceMode mode) override;
  absl::Status SetRoceTos(const Target& target, uint32_t tos) override;
  absl::Status SetBuffer(const Target& target, const PortBuffer& buffer) override;
  absl::Status SetPfcPrevention(const Target& target, uint16_t timeout_ms) override;
  absl::Status SetDcqcnParam(const Target& target, hal::EcnRole role, const std::string& name,
                             uint64_t value) override;

 private:
  hal::LinkMtu link_;
  std::unique_ptr<hal::Dcb> dcb_;
  std::unique_ptr<hal::EthtoolInfo> info_;
  hal::EcnFiles ecn_;
  hal::CongestionFiles congestion_;
  hal::EthtoolTunable tunable_;
  hal::RdmaCm rdma_cm_;
  hal::HugepagePools hugepages_;
  std::function<void(const std::string&)> on_link_toggle_;

  // The profile of `netdev`'s driver (ethtool -i; "other" when unknown).
  const hal::DriverProfile& ProfileOf(const std::string& netdev) const;
  absl::Status SetDscpDeleteFirst(const Target& t, const hal::DriverProfile& profile, const std::vector<hal::DcbApp>& add,
                                  const std::vector<hal::DcbApp>& remapped, const std::vector<hal::DcbApp>& removed);
  // Tells on_link_toggle_ before a `write` (an ETS, PFC or app write) the
  // netdev's driver may answer with a reset of the netdev
  // (hal::DriverProfile::resets), so its carrier changes are not taken for
  // flaps.
  void NoteResetWrite(const std::string& netdev, bool hal::DriverProfile::Resets::*write);
};

}  // namespace roced::reconcile
