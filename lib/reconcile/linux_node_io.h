// NodeIo on the running kernel: rtnetlink for MTU, DCB netlink for the DSCP
// app table, ETS and PFC, sysfs for ECN enables and hugepages, configfs
// rdma_cm for the default RoCE mode and ToS.
#pragma once

#include "hal/dcb_netlink.h"
#include "hal/ecn_files.h"
#include "hal/hugepage_pools.h"
#include "hal/link_mtu.h"
#include "hal/rdma_cm.h"
#include "reconcile/apply.h"

namespace roced::reconcile {

class LinuxNodeIo : public NodeIo {
 public:
  explicit LinuxNodeIo(hal::Paths paths) : ecn_(paths), rdma_cm_(paths), hugepages_(std::move(paths)) {}

  InterfaceObserved ObserveInterface(const Target& target) override;
  std::optional<uint64_t> ObserveHugepages(const HugepagePool& pool) override;
  absl::Status Write(const Target* target, const Step& step, const Value& from,
                     const Value& to) override;

 private:
  hal::LinkMtu link_;
  hal::DcbNetlink dcb_;
  hal::EcnFiles ecn_;
  hal::RdmaCm rdma_cm_;
  hal::HugepagePools hugepages_;
};

}  // namespace roced::reconcile
