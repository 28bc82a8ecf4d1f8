#include "cluster.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

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

ClusterImpl::ClusterImpl(const bootstrap::ClusterConfig& config) : config_(config), stats_(config.name) {
  // Envoy's cluster stats exist (at 0) from the cluster's creation on (ClusterStats).
  if (config_.type == bootstrap::ClusterConfig::Type::Static) {
    for (auto& a : config_.endpoints) {
      in6_addr tmp;
      if (inet_pton(AF_INET, a.address.c_str(), &tmp) != 1 && inet_pton(AF_INET6, a.address.c_str(), &tmp) != 1)
        throw std::runtime_error("cluster " + config_.name + ": STATIC endpoint " + a.address + " is not an IP address");
      endpoints_.push_back(Endpoint{a.address, a.port});
      stats_.host(endpoints_.back().str());
    }
  }
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
  for (auto& e : first) stats_.host(e.str());
  {
    std::lock_guard<std::mutex> lock(endpoints_mu_);
    endpoints_ = std::move(first);
  }
  // Detached: the cluster lives for the whole process and the process ends with _exit, so the
  // thread never outlives its cluster.
  std::thread([this] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(config_.dns_refresh_rate_ms > 0 ? config_.dns_refresh_rate_ms : 5000));
      auto eps = resolveAll();
      for (auto& e : eps) stats_.host(e.str());
      std::lock_guard<std::mutex> lock(endpoints_mu_);
      endpoints_ = std::move(eps);
    }
  }).detach();
}

std::vector<Endpoint> ClusterImpl::endpoints() const {
  std::lock_guard<std::mutex> lock(endpoints_mu_);
  return endpoints_;
}

ConnPool& ClusterImpl::poolFor(Dispatcher& worker) {
  std::lock_guard<std::mutex> lock(pools_mu_);
  auto& slot = pools_[&worker];
  if (!slot) slot = std::make_unique<ConnPool>(worker, config_.name, config_.connect_timeout_ms, stats_);
  return *slot;
}

UpstreamRequestPtr ClusterImpl::newRequest(Dispatcher& worker, UpstreamCallbacks& cb,
                                           const std::optional<std::string>& override_host,
                                           bool override_strict) {
  auto eps = endpoints();
  if (eps.empty()) return nullptr;
  ConnPool& pool = poolFor(worker);
  if (override_host.has_value() && !override_host->empty()) {
    for (auto& ep : eps) {
      if (overrideMatches(*override_host, ep)) return pool.newRequest(ep, cb);
    }
    if (override_strict)
      return pool.failedRequest(cb, UpstreamResetReason::ConnectionFailure, "override host not found");
  }
  return pool.newRequest(eps[pool.nextRoundRobin() % eps.size()], cb);
}

ClusterManagerImpl::ClusterManagerImpl(const std::vector<bootstrap::ClusterConfig>& configs, bool start_dns) {
  for (auto& c : configs) {
    if (by_name_.count(c.name)) throw std::runtime_error("duplicate cluster name " + c.name);
    auto cluster = std::make_unique<ClusterImpl>(c);
    if (start_dns) cluster->startDns();
    ordered_.push_back(cluster.get());
    by_name_[c.name] = std::move(cluster);
  }
}

Cluster* ClusterManagerImpl::get(const std::string& name) {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second.get();
}

} // namespace moe
