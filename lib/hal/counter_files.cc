#include "hal/counter_files.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "util/fs.h"
#include "util/log.h"

namespace roced::hal {
namespace {

// A monotonic clock: a wall-clock step must not stall or hurry rescans.
absl::Time MonotonicNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

size_t DefaultMaxOpenFiles() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
  return static_cast<size_t>(limit.rlim_cur / 2);
}

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Errors that mean the attribute, and so the device, is gone: kernfs
// answers ENODEV for reads of a removed attribute through an open file.
bool IsGone(int err) { return err == ENODEV || err == ENOENT || err == ENXIO; }

constexpr size_t kMaxCounterText = 32;  // u64 is 20 digits, plus newline

// The counter files a directory lists: every entry but hw_counters/lifespan
// (a setting). Empty when the directory is absent.
std::vector<std::string> CounterNames(const std::string& path, CounterSource source) {
  absl::StatusOr<std::vector<std::string>> names = util::ListDir(path);
  std::vector<std::string> out;
  if (!names.ok()) return out;
  for (std::string& name : *names) {
    if (source == CounterSource::kHwCounters && name == "lifespan") continue;
    out.push_back(std::move(name));
  }
  return out;
}

enum class ReadOutcome { kValue, kSkipped, kGone };

// Reads one counter through `fd`, or, when `fd` < 0, by opening
// <dir>/<name> for this read only. kGone: the attribute, and so its device,
// was removed.
ReadOutcome ReadCounter(int fd, const std::string& dir, const std::string& name,
                        uint64_t* value) {
  char buf[kMaxCounterText + 1];
  const bool own = fd < 0;
  // O_NONBLOCK: a FIFO planted under --sysfs-root is not waited on.
  if (own) fd = ::open(absl::StrCat(dir, "/", name).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  ssize_t n = -1;
  int err = errno;
  if (fd >= 0) {
    do {
      n = ::pread(fd, buf, kMaxCounterText, 0);
    } while (n < 0 && errno == EINTR);
    err = errno;
    if (own) ::close(fd);
  }
  if (n < 0) {
    // EINVAL/EIO/EOPNOTSUPP: this counter is unreadable right now (mlx5
    // fails some reads while the port is down); skip it.
    return IsGone(err) ? ReadOutcome::kGone : ReadOutcome::kSkipped;
  }
  return ParseCounterText(buf, static_cast<size_t>(n), value) ? ReadOutcome::kValue
                                                               : ReadOutcome::kSkipped;
}

}  // namespace

const char* CounterSourceName(CounterSource source) {
  return source == CounterSource::kCounters ? "counters" : "hw_counters";
}

bool ParseCounterText(const char* text, size_t size, uint64_t* value) {
  absl::string_view s(text, size);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  if (s.empty() || s.front() == '-' || s.front() == '+') return false;
  return absl::SimpleAtoi(s, value);
}

CounterFiles::CounterFiles(Paths paths, Options options)
    : paths_(std::move(paths)),
      rescan_interval_(options.rescan_interval),
      max_open_files_(options.max_open_files > 0 ? options.max_open_files : DefaultMaxOpenFiles()) {}

CounterFiles::~CounterFiles() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, dirs] : devices_) {
    for (Dir& dir : dirs) {
      for (File& f : dir.files) CloseFile(&f);
    }
  }
}

void CounterFiles::CloseFile(File* file) {
  if (file->fd >= 0) {
    ::close(file->fd);
    file->fd = -1;
    --open_files_;
  }
}

void CounterFiles::DropDevice(const std::string& device) {
  auto it = devices_.find(device);
  if (it == devices_.end()) return;
  for (Dir& dir : it->second) {
    for (File& f : dir.files) CloseFile(&f);
  }
  devices_.erase(it);
}

void CounterFiles::Rescan() {
  std::lock_guard<std::mutex> lock(mu_);
  RescanLocked();
}

void CounterFiles::SyncDir(const std::string& path, Dir* dir) {
  const std::vector<std::string> wanted = CounterNames(path, dir->source);
  // Both lists are sorted: keep files still present, close the others, and
  // open the new ones.
  std::vector<File> next;
  next.reserve(wanted.size());
  auto old = dir->files.begin();
  for (const std::string& name : wanted) {
    while (old != dir->files.end() && old->name < name) CloseFile(&*old++);
    if (old != dir->files.end() && old->name == name) {
      next.push_back(std::move(*old++));
      continue;
    }
    File f;
    f.name = name;
    const std::string file_path = absl::StrCat(path, "/", name);
    // Directories or other non-counter entries (none in current kernels,
    // but a future driver may add a subdirectory) are not counters.
    if (!IsRegularFile(file_path)) continue;
    if (open_files_ < max_open_files_) {
      f.fd = ::open(file_path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (f.fd >= 0) ++open_files_;
    }
    next.push_back(std::move(f));
  }
  while (old != dir->files.end()) CloseFile(&*old++);
  dir->files = std::move(next);
}

void CounterFiles::RescanLocked() {
  scanned_ = true;
  last_scan_ = MonotonicNow();
  const std::string class_dir = paths_.sysfs + "/class/infiniband";
  absl::StatusOr<std::vector<std::string>> names = util::ListDir(class_dir);
  std::set<std::string> present;
  if (names.ok()) present.insert(names->begin(), names->end());
  for (auto it = devices_.begin(); it != devices_.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    std::string gone = it++->first;
    DropDevice(gone);
  }
  for (const std::string& device : present) {
    const std::string ports_dir = absl::StrCat(class_dir, "/", device, "/ports");
    std::vector<uint32_t> ports;
    absl::StatusOr<std::vector<std::string>> port_names = util::ListDir(ports_dir);
    if (port_names.ok()) {
      for (const std::string& p : *port_names) {
        uint32_t n = 0;
        if (absl::SimpleAtoi(p, &n)) ports.push_back(n);
      }
    }
    std::sort(ports.begin(), ports.end());
    std::vector<Dir>& dirs = devices_[device];
    std::vector<Dir> next;
    for (uint32_t port : ports) {
      for (CounterSource source : {CounterSource::kCounters, CounterSource::kHwCounters}) {
        const std::string path =
            absl::StrCat(ports_dir, "/", port, "/", CounterSourceName(source));
        auto existing = std::find_if(dirs.begin(), dirs.end(), [&](const Dir& d) {
          return d.port == port && d.source == source;
        });
        Dir dir;
        if (existing != dirs.end()) {
          dir = std::move(*existing);
          dirs.erase(existing);
        } else {
          dir.device = device;
          dir.port = port;
          dir.source = source;
        }
        dir.path = path;
        SyncDir(path, &dir);
        // rxe has no counters/ (it answers no MADs): no set, not an empty one.
        if (!dir.files.empty()) next.push_back(std::move(dir));
      }
    }
    for (Dir& stale : dirs) {
      for (File& f : stale.files) CloseFile(&f);
    }
    if (next.empty()) {
      devices_.erase(device);
    } else {
      dirs = std::move(next);
    }
  }
}

std::vector<PortCounterSet> CounterFiles::Read() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!scanned_ || MonotonicNow() - last_scan_ >= rescan_interval_) RescanLocked();
  std::vector<PortCounterSet> out;
  std::vector<std::string> gone;
  for (auto& [device, dirs] : devices_) {
    bool device_gone = false;
    std::vector<PortCounterSet> sets;
    for (Dir& dir : dirs) {
      PortCounterSet set;
      set.device = device;
      set.port = dir.port;
      set.source = dir.source;
      set.values.reserve(dir.files.size());
      for (File& f : dir.files) {
        uint64_t value = 0;
        const ReadOutcome outcome = ReadCounter(f.fd, dir.path, f.name, &value);
        if (outcome == ReadOutcome::kGone) {
          device_gone = true;
          break;
        }
        if (outcome == ReadOutcome::kValue) set.values.push_back({f.name, value});
      }
      if (device_gone) break;
      sets.push_back(std::move(set));
    }
    if (device_gone) {
      gone.push_back(device);
      continue;
    }
    for (PortCounterSet& s : sets) out.push_back(std::move(s));
  }
  for (const std::string& device : gone) {
    LOG_INFO << "RDMA device " << device << " is gone; dropping its counters";
    DropDevice(device);
  }
  return out;
}

void CounterFiles::ReadInto(std::vector<PortCounterSet>* sets) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!scanned_ || MonotonicNow() - last_scan_ >= rescan_interval_) RescanLocked();
    if (UpdateInPlaceLocked(sets)) return;
  }
  *sets = Read();
}

bool CounterFiles::UpdateInPlaceLocked(std::vector<PortCounterSet>* sets) {
  size_t i = 0;
  for (auto& [device, dirs] : devices_) {
    for (Dir& dir : dirs) {
      if (i >= sets->size()) return false;
      PortCounterSet& set = (*sets)[i++];
      if (set.port != dir.port || set.source != dir.source || set.device != device ||
          set.values.size() != dir.files.size()) {
        return false;
      }
      for (size_t j = 0; j < dir.files.size(); ++j) {
        File& f = dir.files[j];
        if (set.values[j].name != f.name) return false;
        uint64_t value = 0;
        if (ReadCounter(f.fd, dir.path, f.name, &value) != ReadOutcome::kValue) return false;
        set.values[j].value = value;
      }
    }
  }
  return i == sets->size();
}

std::set<std::string> CounterFiles::Devices() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> out;
  for (const auto& [device, dirs] : devices_) out.insert(device);
  return out;
}

size_t CounterFiles::open_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_files_;
}

std::vector<PortCounterSet> ReadPortCounterSets(const Paths& paths, const std::string& device,
                                                uint32_t port) {
  std::vector<PortCounterSet> out;
  const std::string ports_dir = absl::StrCat(paths.sysfs, "/class/infiniband/", device, "/ports/", port);
  for (CounterSource source : {CounterSource::kCounters, CounterSource::kHwCounters}) {
    const std::string path = absl::StrCat(ports_dir, "/", CounterSourceName(source));
    PortCounterSet set;
    set.device = device;
    set.port = port;
    set.source = source;
    for (const std::string& name : CounterNames(path, source)) {
      if (!IsRegularFile(absl::StrCat(path, "/", name))) continue;
      uint64_t value = 0;
      const ReadOutcome outcome = ReadCounter(-1, path, name, &value);
      if (outcome == ReadOutcome::kGone) return {};
      if (outcome == ReadOutcome::kValue) set.values.push_back({name, value});
    }
    if (!set.values.empty()) out.push_back(std::move(set));
  }
  return out;
}

}  // namespace roced::hal
