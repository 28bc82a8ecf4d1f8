#include "cluster.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "logger.h"
#include "stats.h"
#include "upstream_guard.h"

namespace moe {

const char* toString(UpstreamResetReason r) {
  switch (r) {
  case UpstreamResetReason::ConnectionFailure: return "connection_failure";
  case UpstreamResetReason::ConnectionTermination: return "connection_termination";
  case UpstreamResetReason::ProtocolError: return "protocol_error";
  case UpstreamResetReason::LocalReset: return "local_reset";
  }
  return "unknown";
}

ClusterStats::ClusterStats(const std::string& cluster_name)
    : prefix("cluster." + cluster_name + "."),
      upstream_cx_total(moe::stats().counter(prefix + "upstream_cx_total")),
      upstream_cx_connect_fail(moe::stats().counter(prefix + "upstream_cx_connect_fail")),
      upstream_cx_connect_timeout(moe::stats().counter(prefix + "upstream_cx_connect_timeout")),
      upstream_cx_destroy(moe::stats().counter(prefix + "upstream_cx_destroy")),
      upstream_cx_destroy_local(moe::stats().counter(prefix + "upstream_cx_destroy_local")),
      upstream_cx_destroy_remote(moe::stats().counter(prefix + "upstream_cx_destroy_remote")),
      upstream_rq_total(moe::stats().counter(prefix + "upstream_rq_total")),
      upstream_rq_timeout(moe::stats().counter(prefix + "upstream_rq_timeout")),
      upstream_rq_per_try_timeout(moe::stats().counter(prefix + "upstream_rq_per_try_timeout")),
      upstream_rq_retry(moe::stats().counter(prefix + "upstream_rq_retry")),
      upstream_rq_retry_success(moe::stats().counter(prefix + "upstream_rq_retry_success")),
      upstream_rq_retry_limit_exceeded(moe::stats().counter(prefix + "upstream_rq_retry_limit_exceeded")),
      upstream_rq_retry_overflow(moe::stats().counter(prefix + "upstream_rq_retry_overflow")),
      upstream_rq_retry_backoff_exponential(moe::stats().counter(prefix + "upstream_rq_retry_backoff_exponential")),
      retry_or_shadow_abandoned(moe::stats().counter(prefix + "retry_or_shadow_abandoned")),
      upstream_rq_tx_reset(moe::stats().counter(prefix + "upstream_rq_tx_reset")),
      upstream_rq_rx_reset(moe::stats().counter(prefix + "upstream_rq_rx_reset")),
      upstream_cx_active(moe::stats().gauge(prefix + "upstream_cx_active")),
      upstream_rq_active(moe::stats().gauge(prefix + "upstream_rq_active")),
      upstream_cx_connect_ms(moe::stats().histogram(prefix + "upstream_cx_connect_ms")) {}

Counter& ClusterStats::code(const std::string& scope, uint32_t code) {
  return moe::stats().counter(prefix + scope + "upstream_rq_" + std::to_string(code));
}

void ClusterStats::chargeResponse(uint32_t rc, bool internal_request) {
  // chargeBasicResponseStat, then writeCategory for internal/external.
  for (const char* scope : {"", internal_request ? "internal." : "external."}) {
    moe::stats().counter(prefix + scope + "upstream_rq_completed").inc();
    if (rc >= 100 && rc < 600) {
      moe::stats().counter(prefix + scope + "upstream_rq_" + std::to_string(rc / 100) + "xx").inc();
    }
    code(scope, rc).inc();
  }
}

void ClusterStats::chargeRetryResponse(uint32_t rc) {
  moe::stats().counter(prefix + "retry.upstream_rq_completed").inc();
  if (rc >= 100 && rc < 600) moe::stats().counter(prefix + "retry.upstream_rq_" + std::to_string(rc / 100) + "xx").inc();
  code("retry.", rc).inc();
}

void ClusterStats::chargeResponseTiming(uint64_t ms, bool internal_request) {
  moe::stats().histogram(prefix + "upstream_rq_time").record(ms);
  moe::stats().histogram(prefix + (internal_request ? "internal." : "external.") + "upstream_rq_time").record(ms);
}

HostStats& ClusterStats::host(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [a, h] : hosts_) {
    if (a == address) return *h;
  }
  hosts_.emplace_back(address, std::make_unique<HostStats>());
  return *hosts_.back().second;
}

std::vector<std::pair<std::string, HostStats*>> ClusterStats::hosts() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, HostStats*>> out;
  for (auto& [a, h] : hosts_) out.emplace_back(a, h.get());
  return out;
}

std::string Endpoint::str() const {
  if (ip.find(':') != std::string::npos) return "[" + ip + "]:" + std::to_string(port);
  return ip + ":" + std::to_string(port);
}

namespace {

// getaddrinfo for one endpoint; IPv4 answers first, IPv6 only when there is no IPv4 answer
// (Envoy's V4_PREFERRED lookup family).
std::vector<Endpoint> resolveOne(const bootstrap::SocketAddress& addr, const std::string& cluster) {
  // Test-only: a name that would need a DNS server is not looked up (upstream_guard.h).
  if (!upstream_guard::allowResolve(addr.address, cluster)) return {};
  addrinfo hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(addr.address.c_str(), nullptr, &hints, &res);
  if (rc != 0) {
    MOE_LOG(Warn, "upstream", "dns resolution of %s failed: %s", addr.address.c_str(), gai_strerror(rc));
    return {};
  }
  std::vector<Endpoint> v4, v6;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    char buf[INET6_ADDRSTRLEN];
    Endpoint ep;
    ep.port = addr.port;
    if (ai->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr, buf, sizeof(buf));
      ep.ip = buf;
      bool dup = false;
      for (auto& e : v4) dup |= e.ip == ep.ip;
      if (!dup) v4.push_back(ep);
    } else if (ai->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_addr, buf, sizeof(buf));
      ep.ip = buf;
      bool dup = false;
      for (auto& e : v6) dup |= e.ip == ep.ip;
      if (!dup) v6.push_back(ep);
    }
  }
  freeaddrinfo(res);
  return v4.empty() ? v6 : v4;
}

// override host "ip" or "ip:port" (or "[v6]:port") against one endpoint.
bool overrideMatches(const std::string& host, const Endpoint& ep) {
  if (host == ep.str() || host == ep.ip) return true;
  return host.size() > 2 && host.front() == '[' && host.back() == ']' && host.substr(1, host.size() - 2) == ep.ip;
}

} // namespace

ClusterImpl::ClusterImpl(const bootstrap::ClusterConfig& config) : config_(config), stats_(std::make_shared<ClusterStats>(config.name)) {
  // Envoy's cluster stats exist (at 0) from the cluster's creation on (ClusterStats).
  if (config_.type == bootstrap::ClusterConfig::Type::Static) {
    for (auto& a : config_.endpoints) {
      in6_addr tmp;
      if (inet_pton(AF_INET, a.address.c_str(), &tmp) != 1 && inet_pton(AF_INET6, a.address.c_str(), &tmp) != 1)
        throw std::runtime_error("cluster " + config_.name + ": STATIC endpoint " + a.address + " is not an IP address");
      shared_->endpoints.push_back(Endpoint{a.address, a.port});
      stats_->host(shared_->endpoints.back().str());
    }
  }
}

namespace {
// Pools of removed or replaced clusters. A pool belongs to its worker's loop (its connections
// are events there) and may still carry requests that began before the removal, so it is never
// freed: idle connections close when the upstream closes them. Kept reachable for LeakSanitizer.
std::mutex g_retired_mu;
std::vector<std::unique_ptr<ConnPool>>& retiredPools() {
  static auto* v = new std::vector<std::unique_ptr<ConnPool>>();
  return *v;
}
} // namespace

ClusterImpl::~ClusterImpl() {
  shared_->stopped.store(true);
  std::lock_guard<std::mutex> lock(g_retired_mu);
  for (auto& [d, pool] : pools_) retiredPools().push_back(std::move(pool));
}

std::vector<Endpoint> ClusterImpl::resolveAll() const {
  std::vector<Endpoint> out;
  for (auto& a : config_.endpoints) {
    auto eps = resolveOne(a, config_.name);
    out.insert(out.end(), eps.begin(), eps.end());
  }
  return out;
}

void ClusterImpl::startDns() {
  if (config_.type != bootstrap::ClusterConfig::Type::StrictDns) return;
  auto first = resolveAll();
  if (first.empty()) MOE_LOG(Warn, "upstream", "cluster %s: no endpoint resolved; serving 503 until one does", config_.name.c_str());
  for (auto& e : first) stats_->host(e.str());
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->endpoints = std::move(first);
  }
  // Detached, holding only the shared state and a copy of the config: a cluster removed by CDS
  // stops it at its next wake-up.
  std::thread([shared = shared_, stats = stats_, config = config_] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(config.dns_refresh_rate_ms > 0 ? config.dns_refresh_rate_ms : 5000));
      if (shared->stopped.load()) return;
      std::vector<Endpoint> eps;
      for (auto& a : config.endpoints) {
        auto one = resolveOne(a, config.name);
        eps.insert(eps.end(), one.begin(), one.end());
      }
      for (auto& e : eps) stats->host(e.str());
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->endpoints = std::move(eps);
    }
  }).detach();
}

std::vector<Endpoint> ClusterImpl::endpoints() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->endpoints;
}

ConnPool& ClusterImpl::poolFor(Dispatcher& worker) {
  std::lock_guard<std::mutex> lock(pools_mu_);
  auto& slot = pools_[&worker];
  if (!slot) slot = std::make_unique<ConnPool>(worker, config_.name, config_.connect_timeout_ms, stats_);
  return *slot;
}

UpstreamRequestPtr ClusterImpl::newRequest(Dispatcher& worker, UpstreamCallbacks& cb,
                                           const std::optional<std::string>& override_host,
                                           bool override_strict, bool upgrade) {
  auto eps = endpoints();
  if (eps.empty()) return nullptr;
  ConnPool& pool = poolFor(worker);
  if (override_host.has_value() && !override_host->empty()) {
    for (auto& ep : eps) {
      if (overrideMatches(*override_host, ep)) return pool.newRequest(ep, cb, upgrade);
    }
    if (override_strict)
      return pool.failedRequest(cb, UpstreamResetReason::ConnectionFailure, "override host not found");
  }
  return pool.newRequest(eps[pool.nextRoundRobin() % eps.size()], cb, upgrade);
}

ClusterManagerImpl::ClusterManagerImpl(const std::vector<bootstrap::ClusterConfig>& configs, bool start_dns)
    : start_dns_(start_dns),
      cluster_added_(stats().counter("cluster_manager.cluster_added")),
      cluster_modified_(stats().counter("cluster_manager.cluster_modified")),
      cluster_removed_(stats().counter("cluster_manager.cluster_removed")),
      active_clusters_(stats().gauge("cluster_manager.active_clusters")) {
  for (auto& c : configs) {
    if (by_name_.count(c.name)) throw std::runtime_error("duplicate cluster name " + c.name);
    auto cluster = std::make_shared<ClusterImpl>(c);
    if (start_dns_) cluster->startDns();
    order_.push_back(c.name);
    by_name_[c.name] = Entry{std::move(cluster), false};
    cluster_added_.inc();
  }
  active_clusters_.set(static_cast<int64_t>(by_name_.size()));
}

ClusterSharedPtr ClusterManagerImpl::get(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second.cluster;
}

std::vector<ClusterManagerImpl::DynamicCluster> ClusterManagerImpl::dynamicClusters() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DynamicCluster> out;
  for (auto& name : order_) {
    const Entry& e = by_name_.at(name);
    if (e.added_via_api) out.push_back(DynamicCluster{e.cluster, e.version_info, e.last_updated});
  }
  return out;
}

std::vector<ClusterSharedPtr> ClusterManagerImpl::all() {
  std::vector<ClusterSharedPtr> out;
  for (auto& c : clusters()) out.push_back(c);
  return out;
}

std::vector<std::shared_ptr<ClusterImpl>> ClusterManagerImpl::clusters() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<ClusterImpl>> out;
  for (auto& name : order_) out.push_back(by_name_.at(name).cluster);
  return out;
}

// cds_api_helper.cc onConfigUpdate: removals first (CDS clusters missing from the update), then
// addOrUpdateCluster for each resource; failures are collected and the rest applied.
// cluster_manager_impl.cc addOrUpdateCluster: a static cluster cannot be changed by CDS, an
// unchanged hash is a no-op, a changed one replaces the cluster (requests in flight keep the old
// one: they hold it).
std::string ClusterManagerImpl::onCdsUpdate(const std::vector<bootstrap::ClusterConfig>& clusters,
                                            const std::string& version_info) {
  std::string errors;
  std::map<std::string, const bootstrap::ClusterConfig*> wanted;
  for (auto& c : clusters) {
    if (wanted.count(c.name)) {
      errors += c.name + ": duplicate cluster " + c.name + " found\n";
      continue;
    }
    wanted[c.name] = &c;
  }
  // Built outside the lock: a STRICT_DNS cluster resolves synchronously once.
  std::vector<std::string> remove;
  std::vector<std::pair<std::string, std::shared_ptr<ClusterImpl>>> put;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, e] : by_name_) {
      if (e.added_via_api && !wanted.count(name)) remove.push_back(name);
    }
  }
  for (auto& [name, cfg] : wanted) {
    std::shared_ptr<ClusterImpl> existing = std::dynamic_pointer_cast<ClusterImpl>(get(name));
    bool is_static = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = by_name_.find(name);
      is_static = it != by_name_.end() && !it->second.added_via_api;
    }
    if (is_static) {
      errors += name + ": 'cds: fail to add/update cluster " + name + "' (a static cluster cannot be changed by CDS)\n";
      continue;
    }
    if (existing && !cfg->hash.empty() && existing->config().hash == cfg->hash) continue;
    try {
      auto cluster = std::make_shared<ClusterImpl>(*cfg);
      if (start_dns_) cluster->startDns();
      put.emplace_back(name, std::move(cluster));
    } catch (const std::exception& e) {
      errors += name + ": " + e.what() + "\n";
    }
  }
  std::vector<std::shared_ptr<ClusterImpl>> released;  // destroyed outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& name : remove) {
      released.push_back(by_name_[name].cluster);
      by_name_.erase(name);
      order_.erase(std::find(order_.begin(), order_.end(), name));
      cluster_removed_.inc();
      MOE_LOG(Info, "upstream", "cds: remove cluster '%s'", name.c_str());
    }
    for (auto& [name, cluster] : put) {
      auto it = by_name_.find(name);
      if (it == by_name_.end()) {
        order_.push_back(name);
        by_name_[name] = Entry{std::move(cluster), true, version_info, std::chrono::system_clock::now()};
        cluster_added_.inc();
        MOE_LOG(Info, "upstream", "cds: add cluster '%s'", name.c_str());
      } else {
        released.push_back(it->second.cluster);
        it->second.cluster = std::move(cluster);
        it->second.version_info = version_info;
        it->second.last_updated = std::chrono::system_clock::now();
        cluster_modified_.inc();
        MOE_LOG(Info, "upstream", "cds: update cluster '%s'", name.c_str());
      }
    }
    active_clusters_.set(static_cast<int64_t>(by_name_.size()));
  }
  if (!errors.empty()) return "Error adding/updating cluster(s) " + errors;
  return "";
}

} // namespace moe
