#include "tools/rocectl/call.h"

#include <iostream>

namespace roced::ctl {

std::chrono::system_clock::time_point DeadlineIn(absl::Duration timeout) {
  return std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout);
}

void Print(Output output, const google::protobuf::Message& message, absl::FunctionRef<std::string()> text) {
  switch (output) {
    case Output::kTable: std::cout << text(); break;
    case Output::kJson: std::cout << ToJson(message); break;
    case Output::kYaml: std::cout << ToYaml(message); break;
  }
}

}  // namespace roced::ctl
