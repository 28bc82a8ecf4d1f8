// Unit checks for route_table (domain order, path/regex/header matching, clusters),
// header_matcher (Envoy's HeaderMatcher), access_log_filter and proto_wire. Run with:
//   make -C cgo/host unit
#include <cassert>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "access_log_filter.h"
#include "header_matcher.h"
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

using Kind = bootstrap::HeaderMatcher::Kind;

static bootstrap::HeaderMatcher hmatch(Kind kind, const std::string& value = "", bool invert = false,
                                       bool missing_as_empty = false) {
  bootstrap::HeaderMatcher m;
  m.name = "X-H";  // matched lowercased
  m.kind = kind;
  m.value = value;
  m.invert = invert;
  m.treat_missing_as_empty = missing_as_empty;
  return m;
}

static HeaderMap hdrs(std::vector<std::string> values) {
  HeaderMap h;
  h.addCopy(":path", "/");
  for (auto& v : values) h.addCopy("x-h", v);
  return h;
}

static bool hm(const bootstrap::HeaderMatcher& m, std::vector<std::string> values) {
  return HeaderMatcherImpl(m).matches(hdrs(std::move(values)));
}

// Expectations from Envoy's header_utility.h (HeaderDataBaseImpl::matchesHeadersIndividually,
// HeaderDataPresentMatch, HeaderDataRangeMatch) and test/common/http/header_utility_test.cc.
static void headerMatcherChecks() {
  // Value kinds, case-sensitive unless ignore_case.
  CHECK(hm(hmatch(Kind::Exact, "abc"), {"abc"}));
  CHECK(!hm(hmatch(Kind::Exact, "abc"), {"ABC"}));
  auto ci = hmatch(Kind::Exact, "abc");
  ci.ignore_case = true;
  CHECK(hm(ci, {"aBc"}));
  CHECK(!hm(hmatch(Kind::Exact, ""), {"x"}));                 // string_match exact "" is exact
  CHECK(hm(hmatch(Kind::Exact, ""), {""}));
  CHECK(hm(hmatch(Kind::Prefix, ""), {"anything"}));          // (legacy exact_match "")
  CHECK(hm(hmatch(Kind::Prefix, "ab"), {"abc"}));
  CHECK(!hm(hmatch(Kind::Prefix, "abcd"), {"abc"}));
  CHECK(hm(hmatch(Kind::Suffix, "bc"), {"abc"}));
  CHECK(!hm(hmatch(Kind::Suffix, "xabc"), {"abc"}));
  CHECK(hm(hmatch(Kind::Contains, "b"), {"abc"}));
  CHECK(!hm(hmatch(Kind::Contains, "d"), {"abc"}));
  CHECK(hm(hmatch(Kind::SafeRegex, "a[0-9]+"), {"a12"}));
  CHECK(!hm(hmatch(Kind::SafeRegex, "a[0-9]+"), {"a12b"}));  // whole value
  bool threw = false;
  try {
    HeaderMatcherImpl bad(hmatch(Kind::SafeRegex, "(a"));
  } catch (const std::runtime_error&) {
    threw = true;
  }
  CHECK(threw);

  // Range: [start, end), absl::SimpleAtoi.
  auto range = hmatch(Kind::Range);
  range.range_start = -10;
  range.range_end = 10;
  CHECK(hm(range, {"-10"}));
  CHECK(hm(range, {"9"}));
  CHECK(!hm(range, {"10"}));
  CHECK(hm(range, {" +5 "}));                                 // whitespace and sign
  CHECK(!hm(range, {"5x"}));
  CHECK(!hm(range, {"0x5"}));
  CHECK(!hm(range, {""}));
  CHECK(!hm(range, {"-"}));
  CHECK(!hm(range, {"99999999999999999999"}));              // overflow is not a number
  range.range_start = INT64_MIN;
  range.range_end = INT64_MAX;
  CHECK(hm(range, {"-9223372036854775808"}));
  CHECK(!hm(range, {"9223372036854775808"}));
  CHECK(!hm(range, {"-9223372036854775809"}));

  // Repeated header: each value alone; inverted means no value matches.
  CHECK(hm(hmatch(Kind::Exact, "b"), {"a", "b"}));
  CHECK(!hm(hmatch(Kind::Exact, "a,b"), {"a", "b"}));
  CHECK(!hm(hmatch(Kind::Exact, "b", true), {"a", "b"}));
  CHECK(hm(hmatch(Kind::Exact, "c", true), {"a", "b"}));

  // Absent header: a value matcher fails, inverted or not...
  CHECK(!hm(hmatch(Kind::Exact, "a"), {}));
  CHECK(!hm(hmatch(Kind::Exact, "a", true), {}));
  // ...unless treat_missing_header_as_empty matches "" instead.
  CHECK(hm(hmatch(Kind::Exact, "", false, true), {}));
  CHECK(!hm(hmatch(Kind::Exact, "a", false, true), {}));
  CHECK(hm(hmatch(Kind::Exact, "a", true, true), {}));
  CHECK(!hm(range, {}));
  range.range_start = 0;
  range.range_end = 1;
  range.treat_missing_as_empty = true;
  CHECK(!hm(range, {}));                                      // "" is not a number

  // Present.
  auto present = [](bool p, bool invert, bool missing_as_empty) {
    auto m = hmatch(Kind::Present, "", invert, missing_as_empty);
    m.present = p;
    return m;
  };
  CHECK(hm(present(true, false, false), {"v"}));
  CHECK(!hm(present(true, false, false), {}));
  CHECK(hm(present(false, false, false), {}));
  CHECK(!hm(present(false, false, false), {"v"}));
  CHECK(hm(present(true, true, false), {}));
  CHECK(!hm(present(true, true, false), {"v"}));
  CHECK(!hm(present(false, true, false), {}));
  CHECK(hm(present(true, false, true), {}));                  // missing counts as present ""
  CHECK(!hm(present(false, false, true), {}));
  CHECK(hm(present(true, false, false), {""}));               // an empty value is present
}

static uint64_t fixedRandom() { return 49; }

static bootstrap::AccessLogFilter alf(bootstrap::AccessLogFilter::Type type) {
  bootstrap::AccessLogFilter f;
  f.type = type;
  return f;
}

// Expectations from Envoy's access_log_impl.cc and test/common/access_log/access_log_impl_test.cc.
static void accessLogFilterChecks() {
  using T = bootstrap::AccessLogFilter::Type;
  using Op = bootstrap::AccessLogFilter::Op;
  HeaderMap req_headers;
  req_headers.addCopy(":path", "/");
  req_headers.addCopy("x-h", "yes");
  FormatContext ctx;
  ctx.request_headers = &req_headers;
  ctx.access_log_type = AccessLogType::DownstreamEnd;
  StreamInfo info;
  auto eval = [&](const bootstrap::AccessLogFilter& f) { return AccessLogFilterImpl(f).evaluate(ctx, info); };

  auto status = alf(T::StatusCode);
  status.op = Op::GE;
  status.value = 500;
  CHECK(!eval(status));                                       // no response code is 0
  info.response_code = 503;
  CHECK(eval(status));
  status.op = Op::LE;
  CHECK(!eval(status));
  status.op = Op::NE;
  status.value = 503;
  CHECK(!eval(status));
  status.op = Op::EQ;
  CHECK(eval(status));

  auto duration = alf(T::Duration);
  duration.op = Op::GE;
  duration.value = 1000;
  info.start_steady = std::chrono::steady_clock::now() - std::chrono::milliseconds(1500);
  CHECK(eval(duration));                                      // open stream: up to now
  info.completed = info.start_steady + std::chrono::milliseconds(999);
  CHECK(!eval(duration));

  CHECK(eval(alf(T::NotHealthCheck)));
  CHECK(!eval(alf(T::Traceable)));

  auto header = alf(T::Header);
  header.header = hmatch(Kind::Exact, "yes");
  CHECK(eval(header));
  header.header = hmatch(Kind::Exact, "no");
  CHECK(!eval(header));
  ctx.request_headers = nullptr;                              // no request headers: empty map
  header.header = hmatch(Kind::Present, "", true);
  CHECK(eval(header));
  ctx.request_headers = &req_headers;

  auto flags = alf(T::ResponseFlag);
  CHECK(!eval(flags));
  info.addResponseFlag("UF");
  CHECK(eval(flags));                                         // no flags listed: any flag
  flags.flags = {"NR", "UH"};
  CHECK(!eval(flags));
  flags.flags = {"NR", "UF"};
  CHECK(eval(flags));

  auto grpc = alf(T::GrpcStatus);
  grpc.statuses = {14};
  CHECK(eval(grpc));                                          // 503 maps to Unavailable
  HeaderMap resp, trailers;
  resp.addCopy("grpc-status", "0");
  ctx.response_headers = &resp;
  CHECK(!eval(grpc));
  trailers.addCopy("grpc-status", "14");
  ctx.response_trailers = &trailers;
  CHECK(eval(grpc));                                          // trailers first
  grpc.exclude = true;
  CHECK(!eval(grpc));
  ctx.response_headers = ctx.response_trailers = nullptr;
  info.response_code = 200;
  grpc.exclude = false;
  grpc.statuses = {2};
  CHECK(eval(grpc));                                          // 200 maps to Unknown
  info.response_code.reset();
  CHECK(eval(grpc));                                          // nothing at all is Unknown too

  auto types = alf(T::LogType);
  types.types = {"DownstreamStart", "DownstreamPeriodic"};
  CHECK(!eval(types));
  types.exclude = true;
  CHECK(eval(types));
  ctx.access_log_type = AccessLogType::DownstreamPeriodic;
  CHECK(!eval(types));

  // Runtime: the request id's first 8 hex digits modulo the denominator, else a random number.
  AccessLogFilterImpl::setRandomForTest(&fixedRandom);
  auto runtime = alf(T::Runtime);
  runtime.numerator = 50;
  runtime.denominator = 100;
  CHECK(eval(runtime));                                       // no x-request-id: 49 % 100 < 50
  req_headers.addCopy("x-request-id", "00000063-0000-4000-8000-000000000000");  // 0x63 = 99
  CHECK(!eval(runtime));
  runtime.independent_randomness = true;
  CHECK(eval(runtime));
  runtime.independent_randomness = false;
  runtime.numerator = 100;
  CHECK(eval(runtime));
  runtime.numerator = 0;
  CHECK(!eval(runtime));
  AccessLogFilterImpl::setRandomForTest(nullptr);

  // And / Or short-circuit; an empty And is true, an empty Or false.
  auto t = alf(T::NotHealthCheck), f = alf(T::Traceable);
  auto andf = alf(T::And), orf = alf(T::Or);
  CHECK(eval(andf));
  CHECK(!eval(orf));
  andf.filters = {t, f};
  orf.filters = {f, t};
  CHECK(!eval(andf));
  CHECK(eval(orf));
  andf.filters = {t, orf};
  CHECK(eval(andf));
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
  CHECK(name(h1) == "inv/e");                                // each value on its own, never "1,2"
  h1 = req("x", "/h");
  h1.addCopy("x-a", "0");
  h1.addCopy("x-a", "1,2");
  CHECK(name(h1) == "hdr/d");                                // any value matching is enough
  HeaderMap h2 = req("x", "/h");
  CHECK(name(h2) == "inv/e");                                // x-b absent, inverted present
  h2.addCopy("x-b", "y");
  CHECK(name(h2) == "none");
  HeaderMap h3 = req("x", "/ch");
  h3.addCopy("x-cluster", "picked");
  CHECK(name(h3) == "clusterhdr/picked");
  CHECK(name(req("x", "/w")) == "weighted/w2");              // zero weight never picked

  headerMatcherChecks();
  accessLogFilterChecks();

  // proto_wire: Struct{"k": Value{string_value:"v"}}
  std::string s = proto::encodeStruct({{"k", proto::valueString("v")}});
  CHECK(s == std::string("\x0a\x08\x0a\x01k\x12\x03\x1a\x01v", 10));
  std::string any = proto::encodeAny("t", "v");
  CHECK(any == std::string("\x0a\x01t\x12\x01v", 6));

  if (failures == 0) std::puts("route_table_test: all checks passed");
  return failures == 0 ? 0 : 1;
}
