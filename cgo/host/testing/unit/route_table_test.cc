// Unit checks for route_table (domain order, path/regex/header matching, clusters) and
// proto_wire. Run with:
//   make -C cgo/host unit
#include <cassert>
#include <cstdio>
#include <string>

#include "proto_wire.h"
#include "route_table.h"

using namespace moe;

static int failures = 0;
#define CHECK(cond)                                                                            \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                     \
      failures++;                                                                              \
    }                                                                                          \
  } while (0)

static bootstrap::Route route(const std::string& name, bootstrap::RouteMatch::Kind kind,
                              const std::string& value, const std::string& cluster) {
  bootstrap::Route r;
  r.name = name;
  r.match.kind = kind;
  r.match.value = value;
  bootstrap::RouteAction a;
  a.cluster = cluster;
  r.route = a;
  return r;
}

static HeaderMap req(const std::string& host, const std::string& path) {
  HeaderMap h;
  h.addCopy(":authority", host);
  h.addCopy(":path", path);
  h.addCopy(":method", "GET");
  return h;
}

static std::string vhostOf(const RouteTable& t, const std::string& host) {
  auto m = t.route(req(host, "/"));
  return m ? m->virtual_host->name : "";
}

int main() {
  bootstrap::RouteConfiguration rc;
  auto vh = [&](const std::string& name, std::vector<std::string> domains) {
    bootstrap::VirtualHost v;
    v.name = name;
    v.domains = domains;
    v.routes.push_back(route(name + "_r", bootstrap::RouteMatch::Kind::Prefix, "/", "c_" + name));
    rc.virtual_hosts.push_back(v);
  };
  vh("star", {"*"});
  vh("suffix_short", {"*.com"});
  vh("suffix_long", {"*.example.com"});
  vh("prefix", {"api.*"});
  vh("exact", {"www.example.com", "Host.With.Port:8080"});
  RouteTable t(rc);
  CHECK(vhostOf(t, "www.example.com") == "exact");
  CHECK(vhostOf(t, "WWW.EXAMPLE.COM") == "exact");           // lowercased
  CHECK(vhostOf(t, "host.with.port:8080") == "exact");       // port kept
  CHECK(vhostOf(t, "a.example.com") == "suffix_long");       // longest suffix
  CHECK(vhostOf(t, "a.other.com") == "suffix_short");
  CHECK(vhostOf(t, "api.internal") == "prefix");
  CHECK(vhostOf(t, "api.x.com") == "suffix_short");          // suffix wins over prefix
  CHECK(vhostOf(t, "elsewhere") == "star");
  CHECK(vhostOf(t, "www.example.com:80") == "star");         // port not stripped

  // Routes: first match, path kinds, case sensitivity, query handling, headers.
  bootstrap::RouteConfiguration rc2;
  bootstrap::VirtualHost v;
  v.name = "v";
  v.domains = {"*"};
  v.routes.push_back(route("exact_path", bootstrap::RouteMatch::Kind::Path, "/exact", "a"));
  auto ci = route("ci_prefix", bootstrap::RouteMatch::Kind::Prefix, "/CI", "b");
  ci.match.case_sensitive = false;
  v.routes.push_back(ci);
  v.routes.push_back(route("regex", bootstrap::RouteMatch::Kind::SafeRegex, "/re/[0-9]+", "c"));
  auto hdr = route("hdr", bootstrap::RouteMatch::Kind::Prefix, "/h", "d");
  bootstrap::HeaderMatcher hm;
  hm.name = "x-a";
  hm.kind = bootstrap::HeaderMatcher::Kind::Exact;
  hm.value = "1,2";
  hdr.match.headers.push_back(hm);
  v.routes.push_back(hdr);
  auto inv = route("inv", bootstrap::RouteMatch::Kind::Prefix, "/h", "e");
  bootstrap::HeaderMatcher absent;
  absent.name = "x-b";
  absent.kind = bootstrap::HeaderMatcher::Kind::Present;
  absent.present = true;
  absent.invert = true;
  inv.match.headers.push_back(absent);
  v.routes.push_back(inv);
  auto ch = route("clusterhdr", bootstrap::RouteMatch::Kind::Prefix, "/ch", "");
  ch.route->cluster_header = "x-cluster";
  v.routes.push_back(ch);
  auto w = route("weighted", bootstrap::RouteMatch::Kind::Prefix, "/w", "");
  w.route->weighted_clusters = {{"w1", 0}, {"w2", 5}};
  v.routes.push_back(w);
  rc2.virtual_hosts.push_back(v);
  RouteTable t2(rc2);
  auto name = [&](HeaderMap h) {
    auto m = t2.route(h);
    return m ? m->route->name + "/" + m->cluster_name : std::string("none");
  };
  CHECK(name(req("x", "/exact?q=1")) == "exact_path/a");
  CHECK(name(req("x", "/exact/more")) == "none");
  CHECK(name(req("x", "/ci/x")) == "ci_prefix/b");
  CHECK(name(req("x", "/re/123?z")) == "regex/c");
  CHECK(name(req("x", "/re/12a")) == "none");
  HeaderMap h1 = req("x", "/h");
  h1.addCopy("x-a", "1");
  h1.addCopy("x-a", "2");
  CHECK(name(h1) == "hdr/d");                                // values joined with ','
  HeaderMap h2 = req("x", "/h");
  CHECK(name(h2) == "inv/e");                                // x-b absent, inverted present
  h2.addCopy("x-b", "y");
  CHECK(name(h2) == "none");
  HeaderMap h3 = req("x", "/ch");
  h3.addCopy("x-cluster", "picked");
  CHECK(name(h3) == "clusterhdr/picked");
  CHECK(name(req("x", "/w")) == "weighted/w2");              // zero weight never picked

  // proto_wire: Struct{"k": Value{string_value:"v"}}
  std::string s = proto::encodeStruct({{"k", proto::valueString("v")}});
  CHECK(s == std::string("\x0a\x08\x0a\x01k\x12\x03\x1a\x01v", 10));
  std::string any = proto::encodeAny("t", "v");
  CHECK(any == std::string("\x0a\x01t\x12\x01v", 6));

  if (failures == 0) std::puts("route_table_test: all checks passed");
  return failures == 0 ? 0 : 1;
}
