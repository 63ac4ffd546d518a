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

// Fills a Duration or Timestamp from nanoseconds (seconds and nanos).
template <typename ProtoTime>
ProtoTime FromNanos(int64_t ns) {
  ProtoTime out;
  out.set_seconds(ns / 1000000000);
  out.set_nanos(static_cast<int32_t>(ns % 1000000000));
  return out;
}

inline google::protobuf::Duration ToProto(absl::Duration d) {
  return FromNanos<google::protobuf::Duration>(absl::ToInt64Nanoseconds(d));
}

inline google::protobuf::Timestamp ToProto(absl::Time t) {
  return FromNanos<google::protobuf::Timestamp>(absl::ToUnixNanos(t));
}

}  // namespace roced::util
