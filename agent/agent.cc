#include "agent/agent.h"

#include <unistd.h>

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"
#include "model/validate.h"
#include "roced/version.h"
#include "util/fs.h"
#include "util/log.h"

namespace roced::agent {

using google::protobuf::util::TimeUtil;

bool Subscription::Next(roced::v1::StateEvent* event, absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                    [this] { return closed_ || !queue_.empty(); })) {
    return false;
  }
  if (queue_.empty()) return false;  // closed
  *event = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void Subscription::Push(const roced::v1::StateEvent& event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    if (queue_.size() >= kMaxQueued) queue_.pop_front();
    queue_.push_back(event);
  }
  cv_.notify_one();
}

void Subscription::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool Subscription::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

namespace {
std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}
}  // namespace

Agent::Agent(AgentOptions options)
    : options_(std::move(options)),
      discovery_(options_.paths),
      registry_(std::make_shared<prometheus::Registry>()) {
  discovery_runs_ = &prometheus::BuildCounter()
                         .Name("roced_discovery_runs_total")
                         .Help("Device discovery passes, by result.")
                         .Register(*registry_);
  config_loads_ = &prometheus::BuildCounter()
                       .Name("roced_config_loads_total")
                       .Help("Config file loads (start-up and SIGHUP), by result.")
                       .Register(*registry_);
  discovery_duration_ = &prometheus::BuildHistogram()
                             .Name("roced_discovery_duration_seconds")
                             .Help("Wall time of one device discovery pass.")
                             .Register(*registry_)
                             .Add({}, prometheus::Histogram::BucketBoundaries{
                                          0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                          0.25, 0.5, 1});
  // Pre-create the label sets so a scrape before the first failure still
  // shows the failure series at 0.
  for (const char* r : {"success", "error"}) {
    discovery_runs_->Add({{"result", r}});
    config_loads_->Add({{"result", r}});
  }
  absl::MutexLock lock(&mu_);
  state_.set_hostname(Hostname());
  state_.mutable_agent()->set_version(kVersion);
  state_.mutable_agent()->set_git_commit(kGitCommit);
  *state_.mutable_agent()->mutable_started_at() = TimeUtil::GetCurrentTime();
}

Agent::~Agent() { Stop(); }

void Agent::SetComponentHealth(const std::string& name, bool healthy,
                               const std::string& message) {
  absl::MutexLock lock(&mu_);
  roced::v1::ComponentHealth* c = nullptr;
  for (auto& existing : *state_.mutable_agent()->mutable_components()) {
    if (existing.name() == name) c = &existing;
  }
  if (c == nullptr) {
    c = state_.mutable_agent()->add_components();
    c->set_name(name);
  }
  c->set_healthy(healthy);
  c->set_message(message);
  if (healthy) *c->mutable_last_success() = TimeUtil::GetCurrentTime();
}

absl::Status Agent::LoadConfig() {
  if (options_.config_path.empty()) return absl::OkStatus();
  roced::v1::ConfigEvent event;
  absl::Status status;
  std::vector<roced::v1::ValidationIssue> warnings;
  absl::StatusOr<roced::v1::NodeConfig> config;
  if (options_.config_optional && !util::PathExists(options_.config_path)) {
    LOG_WARNING << "config " << options_.config_path
                << " does not exist; running without desired state (observe only)";
    SetComponentHealth("config", true, "no config file; nothing is managed");
    return absl::OkStatus();
  }
  config = model::LoadConfigFile(options_.config_path, &warnings);
  for (const auto& w : warnings) {
    std::string line = model::FormatIssues(options_.config_path, {w});
    if (!line.empty() && line.back() == '\n') line.pop_back();
    LOG_WARNING << line;
  }
  if (!config.ok()) {
    status = config.status();
    config_loads_->Add({{"result", "error"}}).Increment();
    event.set_accepted(false);
    event.set_error(std::string(status.message()));
    {
      absl::MutexLock lock(&mu_);
      state_.mutable_config()->set_last_error(std::string(status.message()));
      event.set_generation(state_.config().generation());
    }
    SetComponentHealth("config", false, "last load rejected; previous config in force");
  } else {
    model::ApplyDefaults(&*config);
    config_loads_->Add({{"result", "success"}}).Increment();
    absl::MutexLock lock(&mu_);
    auto* cs = state_.mutable_config();
    bool changed = !google::protobuf::util::MessageDifferencer::Equals(cs->desired(), *config);
    if (changed || cs->generation() == 0) {
      cs->set_generation(cs->generation() + 1);
      *cs->mutable_desired() = *config;
      *cs->mutable_accepted_at() = TimeUtil::GetCurrentTime();
    }
    cs->set_source(roced::v1::CONFIG_SOURCE_FILE);
    cs->set_path(options_.config_path);
    cs->set_mode(config->mode());
    cs->clear_last_error();
    event.set_accepted(true);
    event.set_generation(cs->generation());
    event.set_source(roced::v1::CONFIG_SOURCE_FILE);
  }
  if (status.ok()) SetComponentHealth("config", true, "");
  roced::v1::StateEvent ev;
  *ev.mutable_config() = event;
  Publish(std::move(ev));
  return status;
}

void Agent::RefreshDevices(const std::string& reason) {
  absl::Time start = absl::Now();
  if (options_.use_verbs && options_.paths.IsLiveSysfs()) verbs_.Refresh();
  auto devices = discovery_.Discover();
  discovery_duration_->Observe(absl::ToDoubleSeconds(absl::Now() - start));
  if (!devices.ok()) {
    discovery_runs_->Add({{"result", "error"}}).Increment();
    LOG_ERROR << "discovery (" << reason << ") failed: " << devices.status();
    SetComponentHealth("discovery", false, std::string(devices.status().message()));
    return;
  }
  discovery_runs_->Add({{"result", "success"}}).Increment();
  if (options_.use_verbs && options_.paths.IsLiveSysfs()) verbs_.Enrich(&*devices);

  std::vector<roced::v1::StateEvent> events;
  {
    absl::MutexLock lock(&mu_);
    std::map<std::string, const roced::v1::RdmaDevice*> before;
    for (const auto& d : state_.devices()) before[d.name()] = &d;
    std::set<std::string> after;
    for (const auto& d : *devices) {
      after.insert(d.name());
      auto it = before.find(d.name());
      roced::v1::DeviceEvent ev;
      ev.set_device(d.name());
      if (it == before.end()) {
        ev.set_kind(roced::v1::DeviceEvent::KIND_ADDED);
        ev.set_detail(absl::StrCat(d.ports_size(), " port(s), driver ", d.driver()));
      } else if (!google::protobuf::util::MessageDifferencer::Equals(*it->second, d)) {
        ev.set_kind(roced::v1::DeviceEvent::KIND_CHANGED);
        ev.set_detail(reason);
      } else {
        continue;
      }
      roced::v1::StateEvent se;
      *se.mutable_device() = ev;
      events.push_back(std::move(se));
    }
    for (const auto& [name, dev] : before) {
      if (after.count(name)) continue;
      roced::v1::StateEvent se;
      se.mutable_device()->set_kind(roced::v1::DeviceEvent::KIND_REMOVED);
      se.mutable_device()->set_device(name);
      events.push_back(std::move(se));
    }
    state_.clear_devices();
    for (auto& d : *devices) *state_.add_devices() = std::move(d);
    *state_.mutable_observed_at() = TimeUtil::GetCurrentTime();
  }
  SetComponentHealth("discovery", true, "");
  for (auto& ev : events) {
    LOG_INFO << "device " << ev.device().device() << ": "
             << roced::v1::DeviceEvent::Kind_Name(ev.device().kind()) << " ("
             << ev.device().detail() << ")";
    Publish(std::move(ev));
  }
}

void Agent::Start() {
  RefreshDevices("start-up");
  if (options_.use_netlink) {
    monitor_ = std::make_unique<hal::LinkMonitor>([this](const std::string& reason) {
      absl::MutexLock lock(&loop_mu_);
      refresh_requested_ = true;
      refresh_reason_ = reason;
    });
    if (absl::Status s = monitor_->Start(); !s.ok()) {
      LOG_WARNING << "netlink monitor unavailable (" << s
                  << "); relying on periodic discovery every "
                  << absl::FormatDuration(options_.discovery_interval);
      monitor_.reset();
    }
  }
  loop_ = std::thread([this] { DiscoveryLoop(); });
}

void Agent::DiscoveryLoop() {
  while (true) {
    std::string reason = "periodic";
    {
      absl::MutexLock lock(&loop_mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_mu_) {
        return stop_ || refresh_requested_;
      };
      loop_mu_.AwaitWithTimeout(absl::Condition(&wake), options_.discovery_interval);
      if (stop_) return;
      if (refresh_requested_) reason = refresh_reason_;
      refresh_requested_ = false;
    }
    RefreshDevices(reason);
  }
}

void Agent::Stop() {
  {
    absl::MutexLock lock(&loop_mu_);
    stop_ = true;
  }
  if (loop_.joinable()) loop_.join();
  if (monitor_) monitor_->Stop();
  verbs_.CloseAll();
  absl::MutexLock lock(&mu_);
  for (auto& s : subscribers_) s->Close();
  subscribers_.clear();
}

roced::v1::NodeState Agent::State() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

std::shared_ptr<Subscription> Agent::Subscribe() {
  auto sub = std::make_shared<Subscription>();
  absl::MutexLock lock(&mu_);
  subscribers_.push_back(sub);
  return sub;
}

void Agent::Unsubscribe(const std::shared_ptr<Subscription>& sub) {
  sub->Close();
  absl::MutexLock lock(&mu_);
  std::erase(subscribers_, sub);
}

void Agent::Publish(roced::v1::StateEvent event) {
  *event.mutable_at() = TimeUtil::GetCurrentTime();
  absl::MutexLock lock(&mu_);
  for (auto& s : subscribers_) s->Push(event);
}

}  // namespace roced::agent
