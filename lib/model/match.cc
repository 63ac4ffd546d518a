#include "model/match.h"

#include "absl/strings/ascii.h"

namespace roced::model {

bool MatchesPort(const roced::v1::InterfaceMatch& match, const roced::v1::RdmaDevice& device,
                 const roced::v1::Port& port) {
  switch (match.key_case()) {
    case roced::v1::InterfaceMatch::kNetdev: return port.netdev() == match.netdev();
    case roced::v1::InterfaceMatch::kRdmaDevice: return device.name() == match.rdma_device();
    case roced::v1::InterfaceMatch::kPci:
      return !device.pci_address().empty() &&
             absl::AsciiStrToLower(device.pci_address()) == absl::AsciiStrToLower(match.pci());
    default: return false;
  }
}

}  // namespace roced::model
