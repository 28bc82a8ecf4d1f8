// Clusters and the cluster manager (Envoy: source/common/upstream/cluster_manager_impl.cc,
// static and strict_dns clusters): endpoints, per-worker connection pools, round robin and
// override-host selection.
#pragma once
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "conn_pool.h"
#include "stats.h"
#include "upstream.h"

namespace moe {

class ClusterImpl : public Cluster {
public:
  explicit ClusterImpl(const bootstrap::ClusterConfig& config);
  // Stops DNS refresh; its per-worker pools are retired (see cluster.cc).
  ~ClusterImpl() override;
  const bootstrap::ClusterConfig& config() const { return config_; }

  const std::string& name() const override { return config_.name; }
  std::vector<Endpoint> endpoints() const override;
  ClusterStats& stats() override { return *stats_; }
  uint64_t connectTimeoutMs() const override { return config_.connect_timeout_ms; }
  UpstreamRequestPtr newRequest(Dispatcher& worker, UpstreamCallbacks& cb,
                                const std::optional<std::string>& override_host,
                                bool override_strict, bool upgrade) override;

  // STRICT_DNS: resolves once now (synchronously) and then every dns_refresh_rate_ms on a
  // background thread. No-op for STATIC.
  void startDns();

private:
  ConnPool& poolFor(Dispatcher& worker);
  std::vector<Endpoint> resolveAll() const;

  // Endpoints, shared with the STRICT_DNS refresh thread, which may outlive the cluster by one
  // refresh interval after a CDS removal.
  struct Shared {
    std::mutex mu;
    std::vector<Endpoint> endpoints;  // guarded by mu
    std::atomic<bool> stopped{false};
  };
  const bootstrap::ClusterConfig config_;
  // Shared with the pools (which a CDS removal retires, not deletes) and the DNS thread.
  std::shared_ptr<ClusterStats> stats_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::mutex pools_mu_;
  std::map<Dispatcher*, std::unique_ptr<ConnPool>> pools_;  // guarded by pools_mu_
};

// Static clusters from the bootstrap, CDS clusters from a file (Envoy: cluster_manager_impl.cc
// addOrUpdateCluster/removeCluster, cds_api_helper.cc). Stats under "cluster_manager.":
// cluster_added, cluster_modified, cluster_removed, active_clusters (gauge).
class ClusterManagerImpl : public ClusterManager {
public:
  // Throws std::runtime_error on an invalid or duplicate static cluster. start_dns=false
  // (validation): STRICT_DNS clusters resolve nothing, those from CDS neither.
  ClusterManagerImpl(const std::vector<bootstrap::ClusterConfig>& configs, bool start_dns);
  ClusterSharedPtr get(const std::string& name) override;
  std::vector<ClusterSharedPtr> all() override;
  // Clusters in order (static first, in bootstrap order; then CDS ones as added).
  std::vector<std::shared_ptr<ClusterImpl>> clusters() const;

  // A CDS state-of-the-world update (main thread): clusters not in it that came by CDS are
  // removed, each other one is added, replaced (when its hash changed) or kept. A cluster that
  // fails is skipped and the others applied; the result names the failures ("" = accepted).
  // version_info is the update's (shown by /config_dump).
  std::string onCdsUpdate(const std::vector<bootstrap::ClusterConfig>& clusters, const std::string& version_info = "");

  // The clusters CDS added, in order, for /config_dump's dynamic_active_clusters: each with the
  // version_info of the update that last added or changed it, and when.
  struct DynamicCluster {
    std::shared_ptr<ClusterImpl> cluster;
    std::string version_info;
    std::chrono::system_clock::time_point last_updated;
  };
  std::vector<DynamicCluster> dynamicClusters() const;

private:
  struct Entry {
    std::shared_ptr<ClusterImpl> cluster;
    bool added_via_api = false;
    std::string version_info;
    std::chrono::system_clock::time_point last_updated;
  };
  const bool start_dns_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> by_name_;  // guarded by mu_
  std::vector<std::string> order_;        // guarded by mu_
  Counter& cluster_added_;
  Counter& cluster_modified_;
  Counter& cluster_removed_;
  Gauge& active_clusters_;
};

} // namespace moe
