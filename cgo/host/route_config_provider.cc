#include "route_config_provider.h"

#include <chrono>
#include <map>
#include <stdexcept>

#include "golang_filter.h"
#include "logger.h"
#include "stats.h"
#include "xds.h"

namespace moe {

RouteConfigImpl::RouteConfigImpl(bootstrap::RouteConfiguration config) : config_(std::move(config)) {
  table_ = std::make_unique<RouteTable>(config_);
  golang::RoutePluginConfigs::preload(config_);
}

RouteConfigImpl::~RouteConfigImpl() { golang::RoutePluginConfigs::release(config_); }

namespace {

class StaticRouteConfigProvider : public RouteConfigProvider {
public:
  explicit StaticRouteConfigProvider(const bootstrap::RouteConfiguration& config)
      : config_(std::make_shared<const RouteConfigImpl>(config)) {}
  RouteConfigConstSharedPtr config() const override { return config_; }

private:
  const RouteConfigConstSharedPtr config_;
};

class RdsRouteConfigProvider : public RouteConfigProvider {
public:
  RdsRouteConfigProvider(const bootstrap::Rds& rds, const std::string& stat_prefix, std::string key)
      : name_(rds.route_config_name), key_(std::move(key)),
        config_reload_(stats().counter(stat_prefix + "rds." + name_ + ".config_reload")),
        update_empty_(stats().counter(stat_prefix + "rds." + name_ + ".update_empty")),
        config_reload_time_ms_(stats().gauge(stat_prefix + "rds." + name_ + ".config_reload_time_ms")) {
    subscription_ = std::make_unique<FilesystemSubscription>(
        *xdsContext().watcher, rds.config_source, "rds", stat_prefix + "rds." + name_ + ".",
        xdsContext().bootstrap_path, [this](const bootstrap::Resources& r) { return onConfigUpdate(r); });
    subscription_->start();
  }
  ~RdsRouteConfigProvider() override;

  RouteConfigConstSharedPtr config() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return config_;
  }

private:
  // rds_route_config_subscription.cc onConfigUpdate.
  std::string onConfigUpdate(const bootstrap::Resources& r) {
    if (r.route_configs.empty()) {
      MOE_LOG(Debug, "rds", "Missing RouteConfiguration for %s in onConfigUpdate()", name_.c_str());
      update_empty_.inc();
      return "";
    }
    if (r.route_configs.size() != 1) {
      return "Unexpected RDS resource length: " + std::to_string(r.route_configs.size());
    }
    const bootstrap::RouteConfiguration& rc = r.route_configs.front();
    if (rc.name != name_) return "Unexpected RDS configuration (expecting " + name_ + "): " + rc.name;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // RouteConfigUpdateReceiverImpl::onRdsUpdate: an unchanged table (same hash) is no reload.
      if (config_ && !rc.hash.empty() && config_->config().hash == rc.hash) return "";
    }
    // Parses the per-route golang configs; throws (update rejected) when Go refuses one.
    auto next = std::make_shared<const RouteConfigImpl>(rc);
    RouteConfigConstSharedPtr previous;
    {
      std::lock_guard<std::mutex> lock(mu_);
      previous = std::move(config_);
      config_ = std::move(next);
    }
    version_info_ = r.version_info;
    last_updated_ = std::chrono::system_clock::now();
    config_reload_.inc();
    config_reload_time_ms_.set(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
    MOE_LOG(Info, "rds", "rds: loading new configuration: config_name=%s version=%s", name_.c_str(),
            r.version_info.c_str());
    // `previous` goes now unless streams still hold it: then with the last of them.
    return "";
  }

  const std::string name_;
  const std::string key_;
  mutable std::mutex mu_;
  RouteConfigConstSharedPtr config_; // guarded by mu_

public:
  // Main thread (as onConfigUpdate).
  std::string version_info_;
  std::chrono::system_clock::time_point last_updated_;

private:
  Counter& config_reload_;
  Counter& update_empty_;
  Gauge& config_reload_time_ms_;
  std::unique_ptr<FilesystemSubscription> subscription_;
};

// Providers by (route_config_name, path), as Envoy shares RDS subscriptions (main thread).
std::map<std::string, std::weak_ptr<RdsRouteConfigProvider>>& rdsProviders() {
  static auto* m = new std::map<std::string, std::weak_ptr<RdsRouteConfigProvider>>();
  return *m;
}

RdsRouteConfigProvider::~RdsRouteConfigProvider() {
  auto it = rdsProviders().find(key_);
  if (it != rdsProviders().end() && it->second.expired()) rdsProviders().erase(it);
}

} // namespace

std::vector<DynamicRouteConfig> dynamicRouteConfigs() {
  std::vector<DynamicRouteConfig> out;
  for (auto& [key, weak] : rdsProviders()) {
    auto p = weak.lock();
    if (!p) continue;
    if (auto c = p->config()) out.push_back(DynamicRouteConfig{std::move(c), p->version_info_, p->last_updated_});
  }
  return out;
}

RouteConfigProviderSharedPtr staticRouteConfigProvider(const bootstrap::RouteConfiguration& config) {
  return std::make_shared<StaticRouteConfigProvider>(config);
}

RouteConfigProviderSharedPtr rdsRouteConfigProvider(const bootstrap::Rds& rds, const std::string& stat_prefix) {
  std::string key = rds.route_config_name + "\n" + rds.config_source.path + "\n" + rds.config_source.watched_directory;
  auto& m = rdsProviders();
  auto it = m.find(key);
  if (it != m.end()) {
    if (auto existing = it->second.lock()) return existing;
  }
  auto p = std::make_shared<RdsRouteConfigProvider>(rds, stat_prefix, key);
  m[key] = p;
  return p;
}

} // namespace moe
