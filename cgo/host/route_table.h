// route_table: Envoy's RouteMatcher reduced to what the compiled bootstrap carries
// (source/common/router/config_impl.cc): virtual host by :authority, first matching route,
// cluster choice, and the per-filter config chain. Built once per route table version;
// immutable and shared by all workers afterwards.
#pragma once
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "header_map.h"
#include "header_matcher.h"
#include "header_parser.h"

namespace moe {

// The result of one match: the chosen route and everything the router and filters need from it.
struct MatchedRoute {
  const bootstrap::RouteConfiguration* route_config = nullptr;
  const bootstrap::VirtualHost* virtual_host = nullptr;
  const bootstrap::Route* route = nullptr;
  // For route actions: the cluster picked (cluster, cluster_header value, or weighted choice).
  std::string cluster_name;
  // Keeps the route table version the pointers above point into alive while the match is
  // used (a stream's snapped route config, route_config_provider.h).
  std::shared_ptr<const void> owner;

  // The header lists of the route configuration, virtual host and route (never null).
  const HeaderParsers* route_config_headers = nullptr;
  const HeaderParsers* virtual_host_headers = nullptr;
  const HeaderParsers* route_headers = nullptr;
  bool most_specific_header_mutations_wins = false;

  // RouteEntryImplBase::finalizeRequestHeaders / finalizeResponseHeaders: the header lists of
  // route, virtual host, route configuration in that order (the last applied wins), or the
  // reverse with most_specific_header_mutations_wins (config_impl.cc getHeaderParsers).
  void finalizeRequestHeaders(HeaderMap& headers, const FormatContext& ctx, const StreamInfo& info) const;
  void finalizeResponseHeaders(HeaderMap& headers, const FormatContext& ctx, const StreamInfo& info) const;

  // Per-filter configs for filter_name from the least to the most specific
  // (route configuration, virtual host, route), as Http::Utility::getAllPerFilterConfig
  // (source/common/http/utility.h:610-634).
  std::vector<const std::map<std::string, bootstrap::RoutePluginConfig>*>
  perFilterConfigs(const std::string& filter_name) const;
};
using MatchedRouteConstSharedPtr = std::shared_ptr<const MatchedRoute>;

class RouteTable {
public:
  // Keeps a reference to config: the caller keeps it alive for the table's lifetime.
  // Throws std::runtime_error on an invalid regex.
  explicit RouteTable(const bootstrap::RouteConfiguration& config);

  // nullptr when no virtual host or no route matches (the router answers 404).
  // owner is stored in the match (MatchedRoute::owner).
  MatchedRouteConstSharedPtr route(const HeaderMap& headers, std::shared_ptr<const void> owner = nullptr) const;

private:
  struct CompiledRoute {
    const bootstrap::Route* route;
    std::unique_ptr<std::regex> path_regex;          // match.kind == SafeRegex
    std::vector<HeaderMatcherImpl> header_matchers;
    std::unique_ptr<HeaderParsers> headers;
  };
  struct CompiledVirtualHost {
    const bootstrap::VirtualHost* vhost;
    std::vector<CompiledRoute> routes;
    std::unique_ptr<HeaderParsers> headers;
  };

  const CompiledVirtualHost* findVirtualHost(const HeaderMap& headers) const;
  static bool routeMatches(const CompiledRoute& r, const HeaderMap& headers);

  const bootstrap::RouteConfiguration& config_;
  std::vector<CompiledVirtualHost> vhosts_;
  std::unique_ptr<HeaderParsers> headers_;
};

} // namespace moe
