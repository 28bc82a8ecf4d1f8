// libFuzzer target: moe-host's loading of the compiled bootstrap (bootstrap.cc, the JSON that
// moectl compile writes), of compiled xDS resource files (filesystem LDS/CDS/RDS, read again
// on every update) and the route tables built from them (route_table.cc), on any text.
//
//   - parseJson either returns a Bootstrap or throws std::runtime_error whose message starts
//     with "compiled bootstrap: " (naming the JSON path); parseResourcesJson the same with
//     "compiled resources: "; never another exception, a crash or undefined behaviour;
//   - what it returns holds the documented limits (port <= 65535, max_request_headers_kb <=
//     8192, cluster_not_found_response_code 503/404/500, one of route/direct_response);
//   - every listener's route table is built (a bad regex: std::runtime_error) and answers a
//     few requests without crashing, choosing only routes and clusters of the config.
// Regexes are std::regex (ECMAScript, backtracking): a pattern from the config is trusted
// (moectl checks the syntax, not the cost), so patterns are kept short here and the requests
// matched against them are short; see SECURITY.md.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "bootstrap.h"
#include "fuzz_common.h"
#include "header_map.h"
#include "route_table.h"

using namespace moe;
using moe::fuzz::describe;

namespace {

bool shortRegexes(const bootstrap::RouteConfiguration& rc) {
  for (auto& vh : rc.virtual_hosts) {
    for (auto& r : vh.routes) {
      if (r.match.kind == bootstrap::RouteMatch::Kind::SafeRegex && r.match.value.size() > 24) return false;
      for (auto& h : r.match.headers) {
        if (h.kind == bootstrap::HeaderMatcher::Kind::SafeRegex && h.value.size() > 24) return false;
      }
    }
  }
  return true;
}

HeaderMapPtr request(const char* authority, const char* path, const char* x) {
  auto h = std::make_unique<HeaderMap>();
  h->addCopy(":authority", authority);
  h->addCopy(":path", path);
  h->addCopy(":method", "GET");
  h->addCopy(":scheme", "http");
  h->addCopy("x-a", x);
  h->addCopy("x-cluster", x);
  return h;
}

// Checks one route table: the documented limits, then (short regexes only) a few lookups.
void checkRouteConfig(const bootstrap::RouteConfiguration& rc) {
  for (auto& vh : rc.virtual_hosts) {
    for (auto& r : vh.routes) {
      FUZZ_CHECK(r.route.has_value() != r.direct_response.has_value());
      if (r.route) {
        const uint32_t c = r.route->cluster_not_found_response_code;
        FUZZ_CHECK(c == 503 || c == 404 || c == 500, std::to_string(c));
        FUZZ_CHECK(!r.route->cluster.empty() || !r.route->cluster_header.empty() || !r.route->weighted_clusters.empty());
      }
      if (r.direct_response) FUZZ_CHECK(r.direct_response->status <= 999);
    }
  }
  if (!shortRegexes(rc)) return;
  std::unique_ptr<RouteTable> table;
  try {
    table = std::make_unique<RouteTable>(rc);
  } catch (const std::runtime_error&) {
    return;  // an invalid regex: moe-host exits naming it (or rejects the update)
  }
  for (auto* path : {"/", "/a/b?c=1", "/api/v1/x", "/A"}) {
    for (auto* host : {"example.com", "a.b.c:8080", "", "*"}) {
      auto h = request(host, path, "v1");
      MatchedRouteConstSharedPtr m = table->route(*h);
      if (!m) continue;
      FUZZ_CHECK(m->route != nullptr && m->virtual_host != nullptr);
      bool found = false;
      for (auto& vh : rc.virtual_hosts)
        for (auto& r : vh.routes) found = found || &r == m->route;
      FUZZ_CHECK(found, "a route outside the config");
      if (m->route->route && m->route->route->cluster_header.empty() && !m->route->route->cluster.empty())
        FUZZ_CHECK(m->cluster_name == m->route->route->cluster, describe(m->cluster_name));
      (void)m->perFilterConfigs("envoy.filters.http.golang");
    }
  }
}

void checkListener(const bootstrap::Listener& l) {
  FUZZ_CHECK(l.hcm.max_request_headers_kb <= 8192);
  checkRouteConfig(l.hcm.route_config);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  // The same text as a compiled xDS resource file (moectl compile --lds/--cds/--rds), which
  // the host reads again on every update while it serves: an error must be a rejection.
  try {
    bootstrap::Resources r = bootstrap::parseResourcesJson(text);
    for (auto& l : r.listeners) checkListener(l);
    for (auto& rc : r.route_configs) checkRouteConfig(rc);
  } catch (const std::runtime_error& e) {
    // The listener, cluster and route parsers are the bootstrap's, and name it.
    const std::string what = e.what();
    FUZZ_CHECK(what.rfind("compiled resources: ", 0) == 0 || what.rfind("compiled bootstrap: ", 0) == 0,
               describe(what));
  }
  bootstrap::Bootstrap b;
  try {
    b = bootstrap::parseJson(text);
  } catch (const std::runtime_error& e) {
    FUZZ_CHECK(std::string(e.what()).rfind("compiled bootstrap: ", 0) == 0, describe(e.what()));
    return 0;
  }
  for (auto& l : b.listeners) checkListener(l);
  return 0;
}
