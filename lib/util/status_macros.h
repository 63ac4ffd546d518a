// Status propagation macros. Abseil 20220623 (Debian 12) ships no
// ABSL_RETURN_IF_ERROR / ASSIGN_OR_RETURN, so these stand in for them.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ROCED_CONCAT_INNER_(a, b) a##b
#define ROCED_CONCAT_(a, b) ROCED_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)                              \
  do {                                                     \
    ::absl::Status roced_status_ = (expr);                 \
    if (!roced_status_.ok()) return roced_status_;         \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, Foo());` assigns the value of a StatusOr or
// returns its status from the enclosing function.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(ROCED_CONCAT_(roced_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(var, lhs, expr) \
  auto var = (expr);                           \
  if (!var.ok()) return var.status();          \
  lhs = std::move(var).value()
