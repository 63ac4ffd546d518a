// Conversions between protobuf's well-known time types and absl's, the one
// place they are written. Durations keep their sign (seconds and nanos
// carry the same sign, as google.protobuf.Duration requires).
#pragma once

#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace roced::util {

inline absl::Duration FromProto(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

inline absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

inline google::protobuf::Duration ToProto(absl::Duration d) {
  google::protobuf::Duration out;
  const int64_t ns = absl::ToInt64Nanoseconds(d);
  out.set_seconds(ns / 1000000000);
  out.set_nanos(static_cast<int32_t>(ns % 1000000000));
  return out;
}

inline google::protobuf::Timestamp ToProto(absl::Time t) {
  google::protobuf::Timestamp out;
  const int64_t ns = absl::ToUnixNanos(t);
  out.set_seconds(ns / 1000000000);
  out.set_nanos(static_cast<int32_t>(ns % 1000000000));
  return out;
}

}  // namespace roced::util
