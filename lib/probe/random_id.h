// Random identifiers for probe results and responder endpoints: 16 hex
// digits, unique within the process and unlikely to repeat across agents.
// Thread-safe.
#pragma once

#include <string>

namespace roced::probe {

std::string RandomId();

}  // namespace roced::probe
