#include "route_table.h"

#include <random>
#include <stdexcept>

namespace moe {
namespace {

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool endsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string_view stripQuery(std::string_view path) {
  auto q = path.find('?');
  return q == std::string_view::npos ? path : path.substr(0, q);
}

std::unique_ptr<std::regex> compile(const std::string& pattern, bool case_sensitive) {
  try {
    auto flags = std::regex::ECMAScript;
    if (!case_sensitive) flags |= std::regex::icase;
    return std::make_unique<std::regex>(pattern, flags);
  } catch (const std::regex_error& e) {
    throw std::runtime_error("route_config: invalid regex '" + pattern + "': " + e.what());
  }
}

uint64_t randomU64() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

} // namespace

std::vector<const std::map<std::string, bootstrap::RoutePluginConfig>*>
MatchedRoute::perFilterConfigs(const std::string& filter_name) const {
  std::vector<const std::map<std::string, bootstrap::RoutePluginConfig>*> out;
  auto add = [&](const bootstrap::PerFilterConfig& pfc) {
    auto it = pfc.find(filter_name);
    if (it != pfc.end()) out.push_back(&it->second);
  };
  if (route_config) add(route_config->per_filter_config);
  if (virtual_host) add(virtual_host->per_filter_config);
  if (route) add(route->per_filter_config);
  return out;
}

void MatchedRoute::finalizeRequestHeaders(HeaderMap& headers, const FormatContext& ctx, const StreamInfo& info) const {
  const HeaderParsers* order[3] = {route_headers, virtual_host_headers, route_config_headers};
  if (most_specific_header_mutations_wins) std::swap(order[0], order[2]);
  for (const HeaderParsers* p : order) {
    if (p) p->request.evaluate(headers, ctx, info);
  }
}

void MatchedRoute::finalizeResponseHeaders(HeaderMap& headers, const FormatContext& ctx, const StreamInfo& info) const {
  const HeaderParsers* order[3] = {route_headers, virtual_host_headers, route_config_headers};
  if (most_specific_header_mutations_wins) std::swap(order[0], order[2]);
  for (const HeaderParsers* p : order) {
    if (p) p->response.evaluate(headers, ctx, info);
  }
}

RouteTable::RouteTable(const bootstrap::RouteConfiguration& config) : config_(config) {
  headers_ = std::make_unique<HeaderParsers>(config_.headers);
  for (auto& vh : config_.virtual_hosts) {
    CompiledVirtualHost cvh{&vh, {}, std::make_unique<HeaderParsers>(vh.headers)};
    for (auto& r : vh.routes) {
      CompiledRoute cr{&r, nullptr, {}, std::make_unique<HeaderParsers>(r.headers)};
      if (r.match.kind == bootstrap::RouteMatch::Kind::SafeRegex) {
        cr.path_regex = compile(r.match.value, r.match.case_sensitive);
      }
      try {
        for (auto& hm : r.match.headers) cr.header_matchers.emplace_back(hm);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string("route_config: ") + e.what());
      }
      cvh.routes.push_back(std::move(cr));
    }
    vhosts_.push_back(std::move(cvh));
  }
}

// Envoy's RouteMatcher::findVirtualHost (config_impl.cc): exact domain first, then the longest
// "*.suffix"/"*suffix" wildcard, then the longest "prefix*" wildcard, then "*". The host is
// lowercased and compared with its port (Envoy's default: no ignore_port_in_host_matching).
const RouteTable::CompiledVirtualHost* RouteTable::findVirtualHost(const HeaderMap& headers) const {
  std::string host = lowerCase(headers.host());
  const CompiledVirtualHost* best_suffix = nullptr;
  size_t best_suffix_len = 0;
  const CompiledVirtualHost* best_prefix = nullptr;
  size_t best_prefix_len = 0;
  const CompiledVirtualHost* fallback = nullptr;
  for (auto& cvh : vhosts_) {
    for (auto& d_in : cvh.vhost->domains) {
      std::string d = lowerCase(d_in);
      if (d == "*") {
        if (!fallback) fallback = &cvh;
      } else if (d == host) {
        return &cvh;
      } else if (d.front() == '*') {
        std::string_view suffix = std::string_view(d).substr(1);
        // Envoy requires the wildcard to cover at least one character.
        if (host.size() > suffix.size() && endsWith(host, suffix) && suffix.size() > best_suffix_len) {
          best_suffix = &cvh;
          best_suffix_len = suffix.size();
        }
      } else if (d.back() == '*') {
        std::string_view prefix = std::string_view(d).substr(0, d.size() - 1);
        if (host.size() > prefix.size() && startsWith(host, prefix) && prefix.size() > best_prefix_len) {
          best_prefix = &cvh;
          best_prefix_len = prefix.size();
        }
      }
    }
  }
  if (best_suffix) return best_suffix;
  if (best_prefix) return best_prefix;
  return fallback;
}

// Path matching as Envoy's Prefix/Path/RegexRouteEntryImpl: prefix compares against the whole
// :path (query included), path and safe_regex against the path without the query string.
bool RouteTable::routeMatches(const CompiledRoute& cr, const HeaderMap& headers) {
  const auto& m = cr.route->match;
  // config_impl.cc:1823: without :path (a CONNECT) only routes that support pathless headers
  // (connect_matcher, not supported here) match.
  if (headers.get(":path") == nullptr) return false;
  std::string_view full = headers.path();
  bool path_ok = false;
  switch (m.kind) {
  case bootstrap::RouteMatch::Kind::Prefix:
    path_ok = m.case_sensitive ? startsWith(full, m.value)
                               : startsWith(lowerCase(full), lowerCase(m.value));
    break;
  case bootstrap::RouteMatch::Kind::Path: {
    std::string_view p = stripQuery(full);
    path_ok = m.case_sensitive ? p == m.value : lowerCase(p) == lowerCase(m.value);
    break;
  }
  case bootstrap::RouteMatch::Kind::SafeRegex:
    path_ok = std::regex_match(std::string(stripQuery(full)), *cr.path_regex);
    break;
  }
  if (!path_ok) return false;

  // Header matchers (Http::HeaderUtility::matchHeaders): all must match, each value of a
  // repeated header on its own (header_matcher.h).
  for (const auto& hm : cr.header_matchers) {
    if (!hm.matches(headers)) return false;
  }
  return true;
}

MatchedRouteConstSharedPtr RouteTable::route(const HeaderMap& headers, std::shared_ptr<const void> owner) const {
  const CompiledVirtualHost* cvh = findVirtualHost(headers);
  if (cvh == nullptr) return nullptr;
  for (auto& cr : cvh->routes) {
    if (!routeMatches(cr, headers)) continue;
    auto out = std::make_shared<MatchedRoute>();
    out->owner = std::move(owner);
    out->route_config = &config_;
    out->virtual_host = cvh->vhost;
    out->route = cr.route;
    out->route_config_headers = headers_.get();
    out->virtual_host_headers = cvh->headers.get();
    out->route_headers = cr.headers.get();
    out->most_specific_header_mutations_wins = config_.most_specific_header_mutations_wins;
    if (cr.route->route) {
      const auto& action = *cr.route->route;
      if (!action.cluster.empty()) {
        out->cluster_name = action.cluster;
      } else if (!action.cluster_header.empty()) {
        // Envoy: the first value of the header; absent header -> empty name -> 503.
        auto* v = headers.get(action.cluster_header);
        if (v) out->cluster_name = *v;
      } else if (!action.weighted_clusters.empty()) {
        uint64_t total = 0;
        for (auto& w : action.weighted_clusters) total += w.weight;
        if (total > 0) {
          uint64_t pick = randomU64() % total;
          for (auto& w : action.weighted_clusters) {
            if (pick < w.weight) {
              out->cluster_name = w.name;
              break;
            }
            pick -= w.weight;
          }
        }
      }
    }
    return out;
  }
  return nullptr;
}

} // namespace moe
