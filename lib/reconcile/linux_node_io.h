// NodeIo on the running kernel: rtnetlink for MTU, DCB netlink for the DSCP
// app table, ETS and PFC, sysfs for ECN enables and hugepages, configfs
// rdma_cm for the default RoCE mode and ToS.
#pragma once

#include "hal/dcb_netlink.h"
#include "hal/link_mtu.h"
#include "hal/node_files.h"
#include "reconcile/apply.h"

namespace roced::reconcile {

class LinuxNodeIo : public NodeIo {
 public:
  explicit LinuxNodeIo(hal::Paths paths) : files_(std::move(paths)) {}

  InterfaceObserved ObserveInterface(const Target& target) override;
  std::optional<uint64_t> ObserveHugepages(const HugepagePool& pool) override;
  absl::Status Write(const Target* target, const Step& step, const Value& from,
                     const Value& to) override;

 private:
  hal::LinkMtu link_;
  hal::DcbNetlink dcb_;
  hal::NodeFiles files_;
};

}  // namespace roced::reconcile
