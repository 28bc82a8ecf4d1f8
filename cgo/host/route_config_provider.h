// Route tables: the inline route_config of a connection manager, or one that comes by RDS from
// a file (Envoy: source/common/router/rds_impl.cc, source/common/rds/
// rds_route_config_subscription.cc). Each version is a RouteConfigImpl; a stream takes the
// version current when its headers arrive (Envoy's snapped route config) and keeps it to its
// end, so a request is served by one route table even when a new one arrives meanwhile. The
// golang per-route configs of a version are parsed when it loads (an invalid one rejects the
// update) and destroyed in Go when its last stream is gone.
//
// RDS stats under "http.<stat_prefix>.rds.<route_config_name>.": the subscription's (xds.h)
// and config_reload, config_reload_time_ms, update_empty (ALL_RDS_STATS).
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "route_table.h"

namespace moe {

class RouteConfigImpl {
public:
  // Throws std::runtime_error when Go rejects a per-route plugin config or a regex is invalid.
  explicit RouteConfigImpl(bootstrap::RouteConfiguration config);
  ~RouteConfigImpl();
  RouteConfigImpl(const RouteConfigImpl&) = delete;
  RouteConfigImpl& operator=(const RouteConfigImpl&) = delete;

  const bootstrap::RouteConfiguration& config() const { return config_; }
  const RouteTable& table() const { return *table_; }

private:
  const bootstrap::RouteConfiguration config_; // the table's pointers refer into it
  std::unique_ptr<RouteTable> table_;
};
using RouteConfigConstSharedPtr = std::shared_ptr<const RouteConfigImpl>;

class RouteConfigProvider {
public:
  virtual ~RouteConfigProvider() = default;
  // The current version (thread-safe); nullptr while an RDS table has never loaded (Envoy's
  // NullConfigImpl: no route matches).
  virtual RouteConfigConstSharedPtr config() const = 0;
};
using RouteConfigProviderSharedPtr = std::shared_ptr<RouteConfigProvider>;

// The inline route_config. Throws like RouteConfigImpl.
RouteConfigProviderSharedPtr staticRouteConfigProvider(const bootstrap::RouteConfiguration& config);

// The RDS route table: shared by every connection manager naming the same route_config_name
// and file (Envoy's RouteConfigProviderManager); the first one's stat_prefix ("http.<prefix>.")
// names its stats. Main thread only. Throws when the file does not exist or cannot be watched.
RouteConfigProviderSharedPtr rdsRouteConfigProvider(const bootstrap::Rds& rds, const std::string& stat_prefix);

// The RDS route tables loaded now, for /config_dump's dynamic_route_configs (one per
// subscription, as Envoy's RouteConfigProviderManager dumps them): the table, the version_info
// of its update and when it loaded. Main thread.
struct DynamicRouteConfig {
  RouteConfigConstSharedPtr config;
  std::string version_info;
  std::chrono::system_clock::time_point last_updated;
};
std::vector<DynamicRouteConfig> dynamicRouteConfigs();

} // namespace moe
