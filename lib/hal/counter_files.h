// Reads the RDMA port counters the kernel exposes in sysfs:
//   <sysfs>/class/infiniband/<dev>/ports/<p>/counters/*     PMA counters
//   <sysfs>/class/infiniband/<dev>/ports/<p>/hw_counters/*  driver counters
// Every file found is read, not a fixed list: hw_counters names differ by
// driver (mlx5, rxe, ...) and node_exporter's fixed list drops most of them.
// `hw_counters/lifespan` is a setting (the kernel's cache time in ms), not a
// counter, and is skipped.
//
// Files are opened once and re-read with pread() at offset 0 (sysfs
// regenerates the text on every read at offset 0), so a scrape costs one
// system call per counter instead of open/read/close plus directory walks.
// Directories are re-listed only every `rescan_interval` (new devices, ports
// or files appear then). A device that disappears is dropped as soon as a
// read of one of its files fails with ENODEV/ENOENT (what kernfs answers for
// a removed attribute), or at the next rescan when its directory is gone,
// and its series stop being reported.
//
// Thread-safe: Read() and Rescan() may be called from any thread (metrics
// scrapes, GetCounters); calls are serialized internally.
// ReadPortCounterSets() (below) is the same reader for one port, uncached.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "hal/paths.h"

namespace roced::hal {

enum class CounterSource { kCounters, kHwCounters };

// "counters" or "hw_counters": the sysfs directory name.
const char* CounterSourceName(CounterSource source);

struct CounterValue {
  std::string name;  // the file name, e.g. "np_cnp_sent"
  uint64_t value = 0;
};

// The counters of one directory: one port's counters/ or hw_counters/.
struct PortCounterSet {
  std::string device;
  uint32_t port = 0;
  CounterSource source = CounterSource::kCounters;
  std::vector<CounterValue> values;  // sorted by name
};

class CounterFiles {
 public:
  struct Options {
    // How often Read() re-lists the directories to pick up devices, ports
    // and files that appeared. Zero: on every Read().
    absl::Duration rescan_interval = absl::Seconds(10);
    // At most this many files are kept open; the rest are opened, read and
    // closed on each Read(). Keeps the agent from using up its descriptor
    // limit (gRPC and the metrics server need descriptors too). 0: half of
    // the process's RLIMIT_NOFILE soft limit at construction.
    size_t max_open_files = 0;
  };

  CounterFiles(Paths paths, Options options);
  // Closes every file.
  ~CounterFiles();
  CounterFiles(const CounterFiles&) = delete;
  CounterFiles& operator=(const CounterFiles&) = delete;

  // Re-lists the directories now: opens the files of new devices, ports and
  // counters and closes those that are gone. An absent class/infiniband
  // directory (no RDMA stack) means no devices, not an error.
  void Rescan();

  // Reads every counter, rescanning first when `rescan_interval` has
  // passed. Sets are ordered by device, port, then source. A file whose
  // text is not a number (or whose read fails with anything but "gone") is
  // left out of this read only.
  std::vector<PortCounterSet> Read();

  // Read() into `sets`, reusing what it holds: when `sets` is what an
  // earlier read left and the files are the same (no device, port or
  // counter came or went) and every one of them was read, only the values
  // are rewritten in place, without an allocation (the scrape path: a
  // scrape of 1,800 counters spent more time copying names than reading).
  // Otherwise as `*sets = Read()`.
  void ReadInto(std::vector<PortCounterSet>* sets);

  // Descriptors currently held open (tests, and the budget check).
  size_t open_files() const;

  // The devices with at least one counter file, as of the last rescan (a
  // device dropped because its files answered "gone" is not among them
  // until a rescan finds it again).
  std::set<std::string> Devices() const;

 private:
  struct File {
    std::string name;
    int fd = -1;  // -1: over the descriptor budget, opened per read
  };
  struct Dir {
    std::string path;
    std::string device;
    uint32_t port = 0;
    CounterSource source = CounterSource::kCounters;
    std::vector<File> files;  // sorted by name
  };

  void RescanLocked();
  // ReadInto's fast path: false (and `sets` partly rewritten) when the
  // layout differs or a file did not read.
  bool UpdateInPlaceLocked(std::vector<PortCounterSet>* sets);
  void SyncDir(const std::string& path, Dir* dir);
  void CloseFile(File* file);
  void DropDevice(const std::string& device);

  const Paths paths_;
  const absl::Duration rescan_interval_;
  size_t max_open_files_;

  // std::mutex, not absl::Mutex: Debian's Abseil is not built with TSan,
  // so absl::Mutex's ordering is invisible to it (false races in TSan runs).
  mutable std::mutex mu_;
  // Below: guarded by mu_; the *Locked/Sync/Close/Drop helpers need it held.
  // Keyed by device name; each device's dirs ordered by port, then source.
  std::map<std::string, std::vector<Dir>> devices_;
  size_t open_files_ = 0;
  bool scanned_ = false;
  absl::Time last_scan_;
};

// One read of one port's counters/ and hw_counters/ that keeps nothing
// open (the probe engine's snapshots before and after a run): the files,
// skips and parsing of CounterFiles::Read(), without its cache. Sets come
// counters/ first; a directory with no readable counter gives no set; a
// device removed during the read gives no sets at all. Thread-safe.
std::vector<PortCounterSet> ReadPortCounterSets(const Paths& paths, const std::string& device,
                                                uint32_t port);

// Parses a counter file's text ("12345\n"); false when it is not a
// non-negative decimal number.
bool ParseCounterText(const char* text, size_t size, uint64_t* value);

}  // namespace roced::hal
