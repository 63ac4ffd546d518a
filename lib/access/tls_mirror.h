// The copies of the TLS files that gRPC reads. gRPC's certificate watcher
// (FileWatcherCertificateProvider) re-reads the files it is given on a
// thread of its own, unbounded: a FIFO put in a certificate's place blocks
// that thread (and the agent's shutdown behind it), /dev/zero is read
// until memory runs out. So gRPC is given copies that roced itself wrote,
// in a directory only roced writes, and roced keeps them current:
//
//   - every kTlsMirrorInterval the three source files are stat()ed (a
//     symlink is followed: Kubernetes renews a secret by swapping one);
//     when one's device, inode, size or modification time changed, the
//     three are read again, each bounded (access::ReadPem: a regular file,
//     at most kMaxPemBytes), written to temporary copies, checked there as
//     at start-up (CheckTlsFiles: parseable, valid now, the key of the
//     certificate) and only then renamed over the copies gRPC reads;
//   - a set that fails (a certificate renewed before its key, a FIFO, a
//     file of 2 GiB) is logged once and the last good copies stay in use
//     until the sources change again.
//
// A renewed certificate so reaches new connections within
// kTlsMirrorInterval plus gRPC's own re-read interval
// (kTlsReloadIntervalSeconds of grpc_tls.h). The copies are removed when the mirror is destroyed.
#pragma once

#include <sys/types.h>

#include <array>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "access/tls_files.h"

namespace roced::access {

inline constexpr absl::Duration kTlsMirrorInterval = absl::Seconds(10);

class TlsMirror {
 public:
  struct Options {
    // Where the copies go: created (mode 0700) when missing; must not be a
    // symlink. Files named cert.pem, key.pem and ca.pem are replaced.
    // Empty: a new directory under $TMPDIR (or /tmp), removed with the
    // mirror.
    std::string dir;
    // The flag names the start-up error uses.
    TlsFlagNames names;
    // cert and key required (else both or neither).
    bool need_identity = false;
    absl::Duration interval = kTlsMirrorInterval;
  };

  // Checks and copies the sources; the error names the flag and the file.
  // The refresh thread starts here.
  static absl::StatusOr<std::unique_ptr<TlsMirror>> Create(const TlsFiles& sources, Options options);
  ~TlsMirror();
  TlsMirror(const TlsMirror&) = delete;
  TlsMirror& operator=(const TlsMirror&) = delete;

  // The copies (empty where the source is empty).
  const TlsFiles& copies() const { return copies_; }

  // One refresh pass, as the thread makes it (tests call it to skip the
  // wait). OK when nothing changed or the copies were replaced; the
  // reason when the changed sources were refused (the copies then stay).
  absl::Status Refresh();
  // How many times the copies were replaced since Create.
  int replacements() const;

 private:
  // One file's identity, as stat() gives it.
  struct Stamp {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = -1;
    int64_t mtime_ns = -1;
    bool operator==(const Stamp&) const = default;
  };
  using Stamps = std::array<Stamp, 3>;

  TlsMirror(const TlsFiles& sources, Options options);
  Stamps StampSources() const;
  absl::Status CopyAll();
  void Loop();

  const TlsFiles sources_;
  const Options options_;
  TlsFiles copies_;
  bool temporary_dir_ = false;  // made by Create (mkdtemp), removed with the mirror

  mutable std::mutex mu_;  // guards the four below
  Stamps copied_;          // the sources' stamps when last copied
  Stamps refused_;         // stamps of a set refused (logged once)
  int replacements_ = 0;
  bool stop_ = false;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace roced::access
