#include "properties.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>
#include <vector>

#include "proto_wire.h"

namespace moe::golang {
namespace {

using Clock = std::chrono::steady_clock;

// absl::FormatTime(t, UTC) default format: RFC3339 with the fraction trimmed, "+00:00".
std::string formatTimestamp(std::chrono::system_clock::time_point tp) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(us / 1000000);
  long frac = static_cast<long>(us % 1000000);
  struct tm tmv;
  gmtime_r(&secs, &tmv);
  char buf[64];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tmv);
  std::string out(buf);
  if (frac != 0) {
    char fb[16];
    snprintf(fb, sizeof(fb), ".%06ld", frac);
    std::string f(fb);
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out + "+00:00";
}

// absl::FormatDuration: "0", "150ms", "1.5s", "2m3s", "1h0m0.5s".
std::string formatDuration(std::chrono::nanoseconds d) {
  int64_t ns = d.count();
  if (ns == 0) return "0";
  std::string out;
  if (ns < 0) {
    out = "-";
    ns = -ns;
  }
  auto fmtUnit = [](int64_t v, int64_t unit, const char* suffix) {
    int64_t whole = v / unit, rem = v % unit;
    std::string s = std::to_string(whole);
    if (rem) {
      int digits = static_cast<int>(std::log10(static_cast<double>(unit)) + 0.5);
      char fb[32];
      snprintf(fb, sizeof(fb), ".%0*lld", digits, static_cast<long long>(rem));
      std::string f(fb);
      while (f.back() == '0') f.pop_back();
      s += f;
    }
    return s + suffix;
  };
  if (ns < 1000) return out + std::to_string(ns) + "ns";
  if (ns < 1000000) return out + fmtUnit(ns, 1000, "us");
  if (ns < 1000000000) return out + fmtUnit(ns, 1000000, "ms");
  int64_t hours = ns / 3600000000000LL;
  ns %= 3600000000000LL;
  int64_t mins = ns / 60000000000LL;
  ns %= 60000000000LL;
  if (hours) out += std::to_string(hours) + "h";
  if (hours || mins) out += std::to_string(mins) + "m";
  if (ns) out += fmtUnit(ns, 1000000000, "s");
  return out;
}

// "ip:port" or "[v6]:port" -> (ip, port)
bool splitAddress(const std::string& s, std::string* ip, std::string* port) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  *ip = s.substr(0, colon);
  if (!ip->empty() && ip->front() == '[') *ip = ip->substr(1, ip->size() - 2);
  *port = s.substr(colon + 1);
  return true;
}

std::string joinedHeader(const HeaderMap& m, const std::string& key) {
  auto values = m.getAll(key);
  std::string out;
  for (size_t i = 0; i < values.size(); i++) {
    if (i) out += ',';
    out += values[i];
  }
  return out;
}

// A CEL value as the path walk sees it (GF:1561-1645): nothing yet (the walk's initial
// CelValue, a null), a scalar already rendered as serializeStringValue would (strings,
// numbers, bools, timestamps, durations, serialized messages), or a map the next path part
// indexes: a root's attributes (request, response, ...), a header map, or the filter state.
// Maps and null do not serialize: SerializationFailure (GF:1647-1692).
struct Value {
  enum Kind { Null, Scalar, Map } kind = Null;
  std::string text;                                           // Scalar
  std::string root;                                           // Map of a root's attributes
  bool is_headers = false;                                    // Map of headers (headers may be null)
  const HeaderMap* headers = nullptr;
  const std::map<std::string, std::string>* strmap = nullptr; // Map of strings (filter_state)
};

Value scalar(std::string s) {
  Value v;
  v.kind = Value::Scalar;
  v.text = std::move(s);
  return v;
}
// HeadersWrapper (context.h:179-193): always a map, even without headers (then every key is
// absent).
Value headerMapValue(const HeaderMap* m) {
  Value v;
  v.kind = Value::Map;
  v.is_headers = true;
  v.headers = m;
  return v;
}
Value rootMap(std::string root) {
  Value v;
  v.kind = Value::Map;
  v.root = std::move(root);
  return v;
}

std::optional<Value> requestAttr(const PropertyContext& c, const std::string& name) {
  const HeaderMap* h = c.request_headers;
  auto hv = [&](const char* key) -> std::optional<Value> {
    if (!h) return std::nullopt;
    const std::string* v = h->get(key);
    if (!v) return std::nullopt;
    return scalar(*v);
  };
  if (name == "path") return hv(":path");
  if (name == "url_path") {
    if (!h || !h->get(":path")) return std::nullopt;
    std::string p = *h->get(":path");
    auto q = p.find('?');
    return scalar(q == std::string::npos ? p : p.substr(0, q));
  }
  if (name == "query") {
    if (!h || !h->get(":path")) return std::nullopt;
    std::string p = *h->get(":path");
    auto q = p.find('?');
    return scalar(q == std::string::npos ? "" : p.substr(q + 1));
  }
  if (name == "host") return hv(":authority");
  if (name == "scheme") return hv(":scheme");
  if (name == "method") return hv(":method");
  if (name == "referer") return hv("referer");
  if (name == "useragent") return hv("user-agent");
  if (name == "id") return hv("x-request-id");
  if (name == "headers") return headerMapValue(h);
  if (name == "time") return scalar(formatTimestamp(c.info.start_time));
  if (name == "protocol") return scalar(c.info.protocol == 0 ? "HTTP/1.0" : "HTTP/1.1");
  if (name == "size") {
    if (h && h->get("content-length")) return scalar(*h->get("content-length"));
    return scalar(std::to_string(c.request_body_bytes));
  }
  if (name == "total_size") {
    return scalar(std::to_string(c.request_body_bytes + (h ? h->byteSize() : 0)));
  }
  if (name == "headers_bytes") return scalar(std::to_string(h ? h->byteSize() : 0));
  if (name == "duration") {
    if (!c.info.last_downstream_rx) return std::nullopt;
    return scalar(formatDuration(*c.info.last_downstream_rx - c.info.start_steady));
  }
  return std::nullopt;
}

std::optional<Value> responseAttr(const PropertyContext& c, const std::string& name) {
  if (name == "code") {
    if (!c.info.response_code) return std::nullopt;
    return scalar(std::to_string(*c.info.response_code));
  }
  if (name == "code_details") {
    if (!c.info.response_code_details) return std::nullopt;
    return scalar(*c.info.response_code_details);
  }
  // context.cc ResponseWrapper: legacyResponseFlags(), the core flags as a bitmask.
  if (name == "flags") return scalar(std::to_string(c.info.legacy_response_flags));
  if (name == "grpc_status") return std::nullopt;
  if (name == "headers") return headerMapValue(c.response_headers);
  if (name == "trailers") return headerMapValue(c.response_trailers);
  if (name == "size") return scalar(std::to_string(c.response_body_bytes));
  if (name == "total_size") {
    uint64_t n = c.response_body_bytes;
    if (c.response_headers) n += c.response_headers->byteSize();
    if (c.response_trailers) n += c.response_trailers->byteSize();
    return scalar(std::to_string(n));
  }
  if (name == "backend_latency") {
    if (!c.info.first_upstream_rx || !c.info.upstream_tx_start) return std::nullopt;
    return scalar(formatDuration(*c.info.first_upstream_rx - *c.info.upstream_tx_start));
  }
  return std::nullopt;
}

std::optional<Value> addressAttr(const std::string& addr, const std::string& name) {
  std::string ip, port;
  if (addr.empty() || !splitAddress(addr, &ip, &port)) return std::nullopt;
  if (name == "address") return scalar(addr);
  if (name == "port") return scalar(port);
  return std::nullopt;
}

// One attribute of a root map (context.cc: RequestWrapper, ResponseWrapper, PeerWrapper,
// UpstreamWrapper, ConnectionWrapper, XDSWrapper operator[]).
std::optional<Value> rootAttr(const PropertyContext& c, const std::string& root, const std::string& name) {
  if (root == "request") return requestAttr(c, name);
  if (root == "response") return responseAttr(c, name);
  if (root == "source") return addressAttr(c.info.downstream.remote_str, name);
  if (root == "destination") return addressAttr(c.info.downstream.local_str, name);
  if (root == "upstream") {
    if (!c.info.upstream_remote_address) return std::nullopt;
    if (name == "address" || name == "port") return addressAttr(*c.info.upstream_remote_address, name);
    if (name == "local_address" && c.info.upstream_local_address) return scalar(*c.info.upstream_local_address);
    return std::nullopt;
  }
  if (root == "connection") {
    if (name == "id") return scalar(std::to_string(c.info.downstream.id));
    if (name == "mtls") return scalar("false");
    if (name == "requested_server_name") return scalar("");
    return std::nullopt;
  }
  if (root == "xds") {
    // context.cc XDSLookupValues: route_name is not found while the stream has no route.
    if (name == "route_name") {
      if (!c.info.has_route) return std::nullopt;
      return scalar(c.info.route_name);
    }
    if (name == "virtual_host_name") return scalar(c.info.virtual_host_name);
    if (name == "filter_chain_name") return scalar(c.info.filter_chain_name);
    if (name == "cluster_name") {
      if (!c.info.upstream_cluster) return std::nullopt;
      return scalar(*c.info.upstream_cluster);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// The top-level identifier (StreamActivation::FindValue, evaluator.cc:42-94). upstream_filter_state
// is not tracked: not found.
std::optional<Value> findValue(const PropertyContext& c, const std::string& name) {
  if (name == "request" || name == "response" || name == "connection" || name == "upstream" ||
      name == "source" || name == "destination" || name == "xds")
    return rootMap(name);
  // A message (the dynamic Metadata), serialized; its fields are not walked here.
  if (name == "metadata") return scalar(proto::encodeMetadata(c.info.dynamic_metadata));
  if (name == "filter_state") {
    Value v;
    v.kind = Value::Map;
    v.strmap = &c.info.filter_state;
    return v;
  }
  return std::nullopt;
}

// map[key] for the maps above.
std::optional<Value> index(const PropertyContext& c, const Value& map, const std::string& key) {
  if (!map.root.empty()) return rootAttr(c, map.root, key);
  if (map.strmap) {
    // FilterStateWrapper (context.cc:713-739): the key as given; a string object serializes as
    // itself.
    auto it = map.strmap->find(key);
    if (it == map.strmap->end()) return std::nullopt;
    return scalar(it->second);
  }
  if (map.is_headers) {
    // HeadersWrapper: lower-cased, every value joined with ','.
    if (!map.headers || key.empty()) return std::nullopt;
    const std::string lkey = lowerCase(key);
    if (!map.headers->get(lkey)) return std::nullopt;
    return scalar(joinedHeader(*map.headers, lkey));
  }
  return std::nullopt;
}

} // namespace

// GF:1561-1645 getStringPropertyInternal, step for step: the path is cut at every '.' (a part
// may be empty; a trailing '.' adds none); the first part names a top-level value, each further
// part indexes the map reached so far (a scalar has no fields: not found). What the walk ends
// on is then serialized (GF:1647-1692): a scalar is the answer, a map (a bare root,
// request.headers, filter_state) or the initial null (the empty path) is SerializationFailure.
CAPIStatus getProperty(const PropertyContext& ctx, std::string_view path, std::string* out) {
  Value value; // the walk's initial CelValue: null
  bool first = true;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('.', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string part(path.substr(start, end - start));
    start = end + 1;
    std::optional<Value> next;
    if (first) {
      first = false;
      next = findValue(ctx, part);
    } else if (value.kind == Value::Map) {
      next = index(ctx, value, part);
    }
    if (!next) return CAPIValueNotFound;
    value = std::move(*next);
  }
  if (value.kind != Value::Scalar) return CAPISerializationFailure;
  *out = value.text;
  return CAPIOK;
}

} // namespace moe::golang
