#include "properties.h"

#include <cmath>
#include <cstdio>
#include <ctime>
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

// A resolved attribute: a scalar rendered to text, a serialized message, or a map/list
// (not serialisable: Envoy returns SerializationFailure).
struct Value {
  enum Kind { NotFound, Scalar, Map } kind = NotFound;
  std::string text;
  const HeaderMap* headers = nullptr;                      // Map of headers
  const std::map<std::string, std::string>* strmap = nullptr; // Map of strings (filter_state)
};

Value scalar(std::string s) { return Value{Value::Scalar, std::move(s), nullptr, nullptr}; }
Value headerMapValue(const HeaderMap* m) {
  if (!m) return Value{};
  return Value{Value::Map, "", m, nullptr};
}

Value requestAttr(const PropertyContext& c, const std::string& name) {
  const HeaderMap* h = c.request_headers;
  auto hv = [&](const char* key) -> Value {
    if (!h) return Value{};
    const std::string* v = h->get(key);
    return v ? scalar(*v) : Value{};
  };
  if (name == "path") return hv(":path");
  if (name == "url_path") {
    if (!h || !h->get(":path")) return Value{};
    std::string p = *h->get(":path");
    auto q = p.find('?');
    return scalar(q == std::string::npos ? p : p.substr(0, q));
  }
  if (name == "query") {
    if (!h || !h->get(":path")) return Value{};
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
    if (!c.info.last_downstream_rx) return Value{};
    return scalar(formatDuration(*c.info.last_downstream_rx - c.info.start_steady));
  }
  return Value{};
}

Value responseAttr(const PropertyContext& c, const std::string& name) {
  if (name == "code") {
    if (!c.info.response_code) return Value{};
    return scalar(std::to_string(*c.info.response_code));
  }
  if (name == "code_details") {
    if (!c.info.response_code_details) return Value{};
    return scalar(*c.info.response_code_details);
  }
  if (name == "flags") return scalar("0"); // the bitmask is not tracked
  if (name == "grpc_status") return Value{};
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
    if (!c.info.first_upstream_rx || !c.info.upstream_tx_start) return Value{};
    return scalar(formatDuration(*c.info.first_upstream_rx - *c.info.upstream_tx_start));
  }
  return Value{};
}

Value addressAttr(const std::string& addr, const std::string& name) {
  std::string ip, port;
  if (addr.empty() || !splitAddress(addr, &ip, &port)) return Value{};
  if (name == "address") return scalar(addr);
  if (name == "port") return scalar(port);
  return Value{};
}

Value topLevel(const PropertyContext& c, const std::string& root, const std::string& name,
               bool* consumed_name) {
  *consumed_name = true;
  if (root == "request") return requestAttr(c, name);
  if (root == "response") return responseAttr(c, name);
  if (root == "source") return addressAttr(c.info.downstream.remote_str, name);
  if (root == "destination") return addressAttr(c.info.downstream.local_str, name);
  if (root == "upstream") {
    if (!c.info.upstream_remote_address) return Value{};
    if (name == "address" || name == "port") return addressAttr(*c.info.upstream_remote_address, name);
    if (name == "local_address" && c.info.upstream_local_address) return scalar(*c.info.upstream_local_address);
    return Value{};
  }
  if (root == "connection") {
    if (name == "id") return scalar(std::to_string(c.info.downstream.id));
    if (name == "mtls") return scalar("false");
    if (name == "requested_server_name") return scalar("");
    return Value{};
  }
  if (root == "xds") {
    if (name == "route_name") return scalar(c.info.route_name);
    if (name == "virtual_host_name") return scalar(c.info.virtual_host_name);
    if (name == "filter_chain_name") return scalar(c.info.filter_chain_name);
    if (name == "cluster_name") {
      if (!c.info.upstream_cluster) return Value{};
      return scalar(*c.info.upstream_cluster);
    }
    return Value{};
  }
  *consumed_name = false;
  if (root == "metadata") return scalar(proto::encodeMetadata(c.info.dynamic_metadata));
  if (root == "filter_state") return Value{Value::Map, "", nullptr, &c.info.filter_state};
  return Value{};
}

} // namespace

// GF:1561-1692: the path is split on '.'; the first part names the root, the next an attribute,
// and a map attribute takes exactly one more part as its key.
CAPIStatus getProperty(const PropertyContext& ctx, std::string_view path_in, std::string* out) {
  std::vector<std::string> parts;
  std::string path(path_in);
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('.', start);
    if (end == std::string::npos) end = path.size();
    parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  if (parts.empty()) return CAPIValueNotFound;
  bool consumed = false;
  Value v = topLevel(ctx, parts[0], parts.size() > 1 ? parts[1] : "", &consumed);
  size_t next = consumed ? 2 : 1;
  if (consumed && parts.size() < 2) {
    // A bare root ("request") is a map in CEL.
    return CAPISerializationFailure;
  }
  if (v.kind == Value::NotFound) return CAPIValueNotFound;
  // filter_state keys may contain dots: the rest of the path is the key.
  if (v.kind == Value::Map && v.strmap) {
    if (next >= parts.size()) return CAPISerializationFailure;
    std::string key = path.substr(path.find('.') + 1);
    auto it = v.strmap->find(key);
    if (it == v.strmap->end()) return CAPIValueNotFound;
    *out = it->second;
    return CAPIOK;
  }
  if (v.kind == Value::Map) {
    if (next >= parts.size()) return CAPISerializationFailure;
    if (next + 1 < parts.size()) return CAPIValueNotFound;
    const std::string key = lowerCase(parts[next]);
    if (!v.headers->get(key)) return CAPIValueNotFound;
    *out = joinedHeader(*v.headers, key);
    return CAPIOK;
  }
  // Scalars have no fields.
  if (next < parts.size()) return CAPIValueNotFound;
  *out = v.text;
  return CAPIOK;
}

} // namespace moe::golang
