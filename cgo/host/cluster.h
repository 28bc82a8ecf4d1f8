// Clusters and the cluster manager (Envoy: source/common/upstream/cluster_manager_impl.cc,
// static and strict_dns clusters): endpoints, per-worker connection pools, round robin and
// override-host selection.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "conn_pool.h"
#include "upstream.h"

namespace moe {

class ClusterImpl : public Cluster {
public:
  explicit ClusterImpl(const bootstrap::ClusterConfig& config);

  const std::string& name() const override { return config_.name; }
  std::vector<Endpoint> endpoints() const override;
  ClusterStats& stats() override { return stats_; }
  uint64_t connectTimeoutMs() const override { return config_.connect_timeout_ms; }
  const bootstrap::ClusterConfig& config() const { return config_; }
  UpstreamRequestPtr newRequest(Dispatcher& worker, UpstreamCallbacks& cb,
                                const std::optional<std::string>& override_host,
                                bool override_strict) override;

  // STRICT_DNS: resolves once now (synchronously) and then every dns_refresh_rate_ms on a
  // background thread. No-op for STATIC.
  void startDns();

private:
  ConnPool& poolFor(Dispatcher& worker);
  std::vector<Endpoint> resolveAll() const;

  const bootstrap::ClusterConfig config_;
  ClusterStats stats_;
  mutable std::mutex endpoints_mu_;
  std::vector<Endpoint> endpoints_;  // guarded by endpoints_mu_
  std::mutex pools_mu_;
  std::map<Dispatcher*, std::unique_ptr<ConnPool>> pools_;  // guarded by pools_mu_
};

class ClusterManagerImpl : public ClusterManager {
public:
  // start_dns=false (validation): STRICT_DNS clusters resolve nothing.
  ClusterManagerImpl(const std::vector<bootstrap::ClusterConfig>& configs, bool start_dns);
  Cluster* get(const std::string& name) override;
  std::vector<Cluster*> all() override { return {ordered_.begin(), ordered_.end()}; }
  // Clusters in bootstrap order.
  const std::vector<ClusterImpl*>& clusters() const { return ordered_; }

private:
  std::map<std::string, std::unique_ptr<ClusterImpl>> by_name_;
  std::vector<ClusterImpl*> ordered_;
};

} // namespace moe
