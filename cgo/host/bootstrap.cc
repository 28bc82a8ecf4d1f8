// Loads the compiled bootstrap JSON (compiled-bootstrap.md) into the plain structs of
// bootstrap.h. moectl already validated everything against Envoy's protos, so this only checks
// shapes and types; every error names the JSON path so a hand-written file is easy to fix.
#include "bootstrap.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace moe::bootstrap {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("compiled bootstrap: " + path + ": " + what);
}

const json& member(const json& obj, const std::string& path, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(path + "." + key, "missing");
  return *it;
}

const json* optionalMember(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

void requireObject(const json& v, const std::string& path) {
  if (!v.is_object()) fail(path, "expected an object");
}
void requireArray(const json& v, const std::string& path) {
  if (!v.is_array()) fail(path, "expected an array");
}

// Calls fn(element, element_path) for each element of the array obj[key]. moectl is written in
// Go, whose encoder turns an empty (nil) slice into null: null and, unless required, a missing
// key both mean "no elements".
template <typename Fn>
void forEach(const json& obj, const std::string& path, const char* key, bool required, Fn fn) {
  auto it = obj.find(key);
  const std::string p = path + "." + key;
  if (it == obj.end()) {
    if (required) fail(p, "missing");
    return;
  }
  if (it->is_null()) return;
  requireArray(*it, p);
  for (size_t i = 0; i < it->size(); i++) fn((*it)[i], p + "[" + std::to_string(i) + "]");
}

std::string getString(const json& obj, const std::string& path, const char* key) {
  const json& v = member(obj, path, key);
  if (!v.is_string()) fail(path + "." + key, "expected a string");
  return v.get<std::string>();
}

std::string getStringOr(const json& obj, const std::string& path, const char* key,
                        const std::string& def) {
  const json* v = optionalMember(obj, key);
  if (!v) return def;
  if (!v->is_string()) fail(path + "." + key, "expected a string");
  return v->get<std::string>();
}

uint64_t getUint(const json& obj, const std::string& path, const char* key, uint64_t max,
                 std::optional<uint64_t> def = std::nullopt) {
  const json* v = optionalMember(obj, key);
  if (!v) {
    if (def) return *def;
    fail(path + "." + key, "missing");
  }
  // nlohmann stores every non-negative integer literal as unsigned.
  if (!v->is_number_unsigned())
    fail(path + "." + key, "expected a non-negative integer");
  uint64_t n = v->get<uint64_t>();
  if (n > max) fail(path + "." + key, "value " + std::to_string(n) + " out of range");
  return n;
}

int64_t getInt(const json& obj, const std::string& path, const char* key) {
  const json& v = member(obj, path, key);
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
    fail(path + "." + key, "expected a 64-bit integer");
  return v.get<int64_t>();
}

bool getBool(const json& obj, const std::string& path, const char* key, bool def) {
  const json* v = optionalMember(obj, key);
  if (!v) return def;
  if (!v->is_boolean()) fail(path + "." + key, "expected a boolean");
  return v->get<bool>();
}

std::string decodeBase64(const std::string& in, const std::string& path) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < in.size() && in[i] != '='; i++) {
    int v = value(in[i]);
    if (v < 0) fail(path, "invalid base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  for (; i < in.size(); i++) {
    if (in[i] != '=') fail(path, "invalid base64");
  }
  return out;
}

SocketAddress parseAddress(const json& v, const std::string& path) {
  requireObject(v, path);
  SocketAddress a;
  a.address = getString(v, path, "address");
  a.port = static_cast<uint16_t>(getUint(v, path, "port", 65535));
  return a;
}

PerFilterConfig parsePerFilterConfig(const json& obj, const std::string& path) {
  PerFilterConfig out;
  const json* v = optionalMember(obj, "per_filter_config");
  if (!v) return out;
  std::string p = path + ".per_filter_config";
  requireObject(*v, p);
  for (auto& [filter_name, plugins] : v->items()) {
    std::string fp = p + "." + filter_name;
    if (!plugins.is_null()) requireObject(plugins, fp);
    auto& dst = out[filter_name];
    if (plugins.is_null()) continue;  // a nil Go map
    for (auto& [plugin_name, cfg] : plugins.items()) {
      std::string pp = fp + "." + plugin_name;
      requireObject(cfg, pp);
      RoutePluginConfig rc;
      rc.disabled = getBool(cfg, pp, "disabled", false);
      if (const json* c = optionalMember(cfg, "config")) {
        if (!c->is_string()) fail(pp + ".config", "expected a base64 string");
        rc.has_config = true;
        rc.config_any = decodeBase64(c->get<std::string>(), pp + ".config");
      }
      dst[plugin_name] = std::move(rc);
    }
  }
  return out;
}

std::vector<FormatToken> parseTokens(const json& v, const std::string& path) {
  std::vector<FormatToken> out;
  if (v.is_null()) return out;
  requireArray(v, path);
  for (size_t i = 0; i < v.size(); i++) {
    const std::string tp = path + "[" + std::to_string(i) + "]";
    const json& t = v[i];
    requireObject(t, tp);
    FormatToken tok;
    tok.text = getStringOr(t, tp, "text", "");
    tok.command = getStringOr(t, tp, "command", "");
    forEach(t, tp, "args", false, [&](const json& a, const std::string& ap) {
      if (!a.is_string()) fail(ap, "expected a string");
      tok.args.push_back(a.get<std::string>());
    });
    if (optionalMember(t, "max_length")) tok.max_length = getUint(t, tp, "max_length", UINT64_MAX);
    out.push_back(std::move(tok));
  }
  return out;
}

Format parseFormat(const json& v, const std::string& path) {
  requireObject(v, path);
  Format f;
  std::string kind = getString(v, path, "kind");
  if (kind == "text") f.kind = Format::Kind::Text;
  else if (kind == "json") f.kind = Format::Kind::Json;
  else fail(path + ".kind", "unknown format kind \"" + kind + "\"");
  f.omit_empty_values = getBool(v, path, "omit_empty_values", false);
  if (const json* t = optionalMember(v, "text")) f.text = parseTokens(*t, path + ".text");
  forEach(v, path, "json", false, [&](const json& piece, const std::string& pp) {
    requireObject(piece, pp);
    FormatJsonPiece jp;
    if (const json* raw = optionalMember(piece, "raw")) {
      if (!raw->is_string()) fail(pp + ".raw", "expected a string");
      jp.raw = raw->get<std::string>();
    } else if (const json* tmpl = optionalMember(piece, "template")) {
      jp.tmpl = parseTokens(*tmpl, pp + ".template");
    } else {
      fail(pp, "one of raw, template is required");
    }
    f.json.push_back(std::move(jp));
  });
  return f;
}

HeaderMutations parseHeaderMutations(const json& obj, const std::string& path) {
  HeaderMutations h;
  const json* v = optionalMember(obj, "headers");
  if (!v) return h;
  const std::string p = path + ".headers";
  requireObject(*v, p);
  auto adds = [&](const char* key, std::vector<HeaderToAdd>& out) {
    forEach(*v, p, key, false, [&](const json& e, const std::string& ep) {
      requireObject(e, ep);
      HeaderToAdd a;
      a.key = getString(e, ep, "key");
      a.value = parseFormat(member(e, ep, "value"), ep + ".value");
      std::string action = getStringOr(e, ep, "append_action", "APPEND_IF_EXISTS_OR_ADD");
      if (action == "APPEND_IF_EXISTS_OR_ADD") a.action = HeaderToAdd::Action::AppendIfExistsOrAdd;
      else if (action == "ADD_IF_ABSENT") a.action = HeaderToAdd::Action::AddIfAbsent;
      else if (action == "OVERWRITE_IF_EXISTS_OR_ADD") a.action = HeaderToAdd::Action::OverwriteIfExistsOrAdd;
      else if (action == "OVERWRITE_IF_EXISTS") a.action = HeaderToAdd::Action::OverwriteIfExists;
      else fail(ep + ".append_action", "unknown append action \"" + action + "\"");
      a.keep_empty_value = getBool(e, ep, "keep_empty_value", false);
      out.push_back(std::move(a));
    });
  };
  auto removes = [&](const char* key, std::vector<std::string>& out) {
    forEach(*v, p, key, false, [&](const json& e, const std::string& ep) {
      if (!e.is_string()) fail(ep, "expected a string");
      out.push_back(e.get<std::string>());
    });
  };
  adds("request_headers_to_add", h.request_add);
  removes("request_headers_to_remove", h.request_remove);
  adds("response_headers_to_add", h.response_add);
  removes("response_headers_to_remove", h.response_remove);
  return h;
}

RetryPolicy parseRetryPolicy(const json& v, const std::string& path) {
  requireObject(v, path);
  RetryPolicy r;
  forEach(v, path, "retry_on", false, [&](const json& e, const std::string& ep) {
    if (!e.is_string()) fail(ep, "expected a string");
    r.retry_on.push_back(e.get<std::string>());
  });
  r.num_retries = static_cast<uint32_t>(getUint(v, path, "num_retries", UINT32_MAX, 1));
  r.per_try_timeout_ms = getUint(v, path, "per_try_timeout_ms", UINT64_MAX, 0);
  forEach(v, path, "retriable_status_codes", false, [&](const json& e, const std::string& ep) {
    if (!e.is_number_unsigned()) fail(ep, "expected a non-negative integer");
    r.retriable_status_codes.push_back(e.get<uint32_t>());
  });
  if (optionalMember(v, "base_interval_ms")) r.base_interval_ms = getUint(v, path, "base_interval_ms", UINT64_MAX);
  if (optionalMember(v, "max_interval_ms")) r.max_interval_ms = getUint(v, path, "max_interval_ms", UINT64_MAX);
  return r;
}

HeaderMatcher parseHeaderMatcher(const json& v, const std::string& path);

AccessLogFilter parseAccessLogFilter(const json& v, const std::string& path) {
  requireObject(v, path);
  AccessLogFilter f;
  using T = AccessLogFilter::Type;
  static const std::map<std::string, T> kTypes = {
      {"status_code", T::StatusCode}, {"duration", T::Duration}, {"not_health_check", T::NotHealthCheck},
      {"traceable", T::Traceable},    {"runtime", T::Runtime},   {"and", T::And},
      {"or", T::Or},                  {"header", T::Header},     {"response_flag", T::ResponseFlag},
      {"grpc_status", T::GrpcStatus}, {"log_type", T::LogType}};
  const std::string type = getString(v, path, "type");
  auto it = kTypes.find(type);
  if (it == kTypes.end()) fail(path + ".type", "unknown access log filter type \"" + type + "\"");
  f.type = it->second;
  const std::string op = getStringOr(v, path, "op", "EQ");
  if (op == "EQ") f.op = AccessLogFilter::Op::EQ;
  else if (op == "GE") f.op = AccessLogFilter::Op::GE;
  else if (op == "LE") f.op = AccessLogFilter::Op::LE;
  else if (op == "NE") f.op = AccessLogFilter::Op::NE;
  else fail(path + ".op", "unknown comparison \"" + op + "\"");
  f.value = static_cast<uint32_t>(getUint(v, path, "value", UINT32_MAX, 0));
  forEach(v, path, "filters", false,
          [&](const json& c, const std::string& cp) { f.filters.push_back(parseAccessLogFilter(c, cp)); });
  if (const json* h = optionalMember(v, "header"); h && !h->is_null()) f.header = parseHeaderMatcher(*h, path + ".header");
  if (f.type == T::Header && !f.header) fail(path + ".header", "missing");
  auto strings = [&](const char* key, std::vector<std::string>& out) {
    forEach(v, path, key, false, [&](const json& e, const std::string& ep) {
      if (!e.is_string()) fail(ep, "expected a string");
      out.push_back(e.get<std::string>());
    });
  };
  strings("flags", f.flags);
  strings("types", f.types);
  forEach(v, path, "statuses", false, [&](const json& e, const std::string& ep) {
    if (!e.is_number_unsigned()) fail(ep, "expected a non-negative integer");
    f.statuses.push_back(e.get<uint32_t>());
  });
  f.exclude = getBool(v, path, "exclude", false);
  f.numerator = static_cast<uint32_t>(getUint(v, path, "numerator", UINT32_MAX, 0));
  f.denominator = static_cast<uint32_t>(getUint(v, path, "denominator", 1000000, 100));
  if (f.denominator == 0) fail(path + ".denominator", "must be positive");
  f.independent_randomness = getBool(v, path, "independent_randomness", false);
  return f;
}

AccessLog parseAccessLog(const json& v, const std::string& path) {
  requireObject(v, path);
  AccessLog a;
  a.name = getStringOr(v, path, "name", "");
  std::string type = getString(v, path, "type");
  if (type == "file") a.type = AccessLog::Type::File;
  else if (type == "stdout") a.type = AccessLog::Type::Stdout;
  else if (type == "stderr") a.type = AccessLog::Type::Stderr;
  else fail(path + ".type", "unknown access log type \"" + type + "\"");
  a.path = getStringOr(v, path, "path", "");
  if (a.type == AccessLog::Type::File && a.path.empty()) fail(path + ".path", "required for a file access log");
  a.format = parseFormat(member(v, path, "format"), path + ".format");
  if (const json* f = optionalMember(v, "filter"); f && !f->is_null()) a.filter = parseAccessLogFilter(*f, path + ".filter");
  return a;
}

HeaderMatcher parseHeaderMatcher(const json& v, const std::string& path) {
  requireObject(v, path);
  HeaderMatcher m;
  m.name = getString(v, path, "name");
  std::string kind = getString(v, path, "kind");
  if (kind == "exact") m.kind = HeaderMatcher::Kind::Exact;
  else if (kind == "prefix") m.kind = HeaderMatcher::Kind::Prefix;
  else if (kind == "suffix") m.kind = HeaderMatcher::Kind::Suffix;
  else if (kind == "contains") m.kind = HeaderMatcher::Kind::Contains;
  else if (kind == "safe_regex") m.kind = HeaderMatcher::Kind::SafeRegex;
  else if (kind == "present") m.kind = HeaderMatcher::Kind::Present;
  else if (kind == "range") m.kind = HeaderMatcher::Kind::Range;
  else fail(path + ".kind", "unknown header matcher kind \"" + kind + "\"");
  m.value = getStringOr(v, path, "value", "");
  if (m.kind == HeaderMatcher::Kind::Range) {
    m.range_start = getInt(v, path, "range_start");
    m.range_end = getInt(v, path, "range_end");
  }
  m.present = getBool(v, path, "present", true);
  m.invert = getBool(v, path, "invert", false);
  m.ignore_case = getBool(v, path, "ignore_case", false);
  m.treat_missing_as_empty = getBool(v, path, "treat_missing_as_empty", false);
  return m;
}

RouteMatch parseRouteMatch(const json& v, const std::string& path) {
  requireObject(v, path);
  RouteMatch m;
  std::string kind = getString(v, path, "kind");
  if (kind == "prefix") m.kind = RouteMatch::Kind::Prefix;
  else if (kind == "path") m.kind = RouteMatch::Kind::Path;
  else if (kind == "safe_regex") m.kind = RouteMatch::Kind::SafeRegex;
  else fail(path + ".kind", "unknown route match kind \"" + kind + "\"");
  m.value = getString(v, path, "value");
  m.case_sensitive = getBool(v, path, "case_sensitive", true);
  forEach(v, path, "headers", false,
          [&](const json& h, const std::string& hp) { m.headers.push_back(parseHeaderMatcher(h, hp)); });
  return m;
}

UpgradeConfig parseUpgradeConfig(const json& v, const std::string& path) {
  requireObject(v, path);
  UpgradeConfig u;
  u.upgrade_type = getString(v, path, "upgrade_type");
  if (u.upgrade_type.empty()) fail(path + ".upgrade_type", "must not be empty");
  u.enabled = getBool(v, path, "enabled", true);
  return u;
}

RouteAction parseRouteAction(const json& v, const std::string& path) {
  requireObject(v, path);
  RouteAction a;
  a.cluster = getStringOr(v, path, "cluster", "");
  a.cluster_header = getStringOr(v, path, "cluster_header", "");
  forEach(v, path, "weighted_clusters", false, [&](const json& wc, const std::string& wp) {
    requireObject(wc, wp);
    WeightedCluster w;
    w.name = getString(wc, wp, "name");
    w.weight = static_cast<uint32_t>(getUint(wc, wp, "weight", UINT32_MAX));
    a.weighted_clusters.push_back(std::move(w));
  });
  if (a.cluster.empty() && a.cluster_header.empty() && a.weighted_clusters.empty())
    fail(path, "one of cluster, cluster_header, weighted_clusters is required");
  if (const json* p = optionalMember(v, "prefix_rewrite")) {
    if (!p->is_string()) fail(path + ".prefix_rewrite", "expected a string");
    a.prefix_rewrite = p->get<std::string>();
  }
  if (const json* h = optionalMember(v, "host_rewrite_literal")) {
    if (!h->is_string()) fail(path + ".host_rewrite_literal", "expected a string");
    a.host_rewrite_literal = h->get<std::string>();
  }
  a.timeout_ms = getUint(v, path, "timeout_ms", UINT64_MAX, 15000);
  a.cluster_not_found_response_code =
      static_cast<uint32_t>(getUint(v, path, "cluster_not_found_response_code", 599, 503));
  if (const json* rp = optionalMember(v, "retry_policy")) a.retry_policy = parseRetryPolicy(*rp, path + ".retry_policy");
  forEach(v, path, "upgrade_configs", false,
          [&](const json& u, const std::string& up) { a.upgrade_configs.push_back(parseUpgradeConfig(u, up)); });
  if (a.cluster_not_found_response_code != 503 && a.cluster_not_found_response_code != 404 &&
      a.cluster_not_found_response_code != 500)
    fail(path + ".cluster_not_found_response_code", "must be 503, 404 or 500");
  return a;
}

Route parseRoute(const json& v, const std::string& path) {
  requireObject(v, path);
  Route r;
  r.name = getStringOr(v, path, "name", "");
  r.match = parseRouteMatch(member(v, path, "match"), path + ".match");
  if (const json* a = optionalMember(v, "route")) r.route = parseRouteAction(*a, path + ".route");
  if (const json* d = optionalMember(v, "direct_response")) {
    std::string dp = path + ".direct_response";
    requireObject(*d, dp);
    DirectResponse dr;
    dr.status = static_cast<uint32_t>(getUint(*d, dp, "status", 999));
    dr.body = getStringOr(*d, dp, "body", "");
    r.direct_response = std::move(dr);
  }
  if (r.route.has_value() == r.direct_response.has_value())
    fail(path, "exactly one of route, direct_response is required");
  r.per_filter_config = parsePerFilterConfig(v, path);
  r.headers = parseHeaderMutations(v, path);
  return r;
}

RouteConfiguration parseRouteConfig(const json& v, const std::string& path) {
  requireObject(v, path);
  RouteConfiguration rc;
  rc.name = getStringOr(v, path, "name", "");
  rc.hash = getStringOr(v, path, "hash", "");
  rc.dump = getStringOr(v, path, "dump", "");
  rc.per_filter_config = parsePerFilterConfig(v, path);
  rc.headers = parseHeaderMutations(v, path);
  rc.most_specific_header_mutations_wins = getBool(v, path, "most_specific_header_mutations_wins", false);
  forEach(v, path, "virtual_hosts", true, [&](const json& vh, const std::string& vp) {
    requireObject(vh, vp);
    VirtualHost out;
    out.name = getStringOr(vh, vp, "name", "");
    forEach(vh, vp, "domains", true, [&](const json& d, const std::string& dp) {
      if (!d.is_string()) fail(dp, "expected a string");
      out.domains.push_back(d.get<std::string>());
    });
    forEach(vh, vp, "routes", true,
            [&](const json& r, const std::string& rp) { out.routes.push_back(parseRoute(r, rp)); });
    out.per_filter_config = parsePerFilterConfig(vh, vp);
    out.headers = parseHeaderMutations(vh, vp);
    out.include_request_attempt_count = getBool(vh, vp, "include_request_attempt_count", false);
    out.include_attempt_count_in_response = getBool(vh, vp, "include_attempt_count_in_response", false);
    rc.virtual_hosts.push_back(std::move(out));
  });
  return rc;
}

HttpFilter parseHttpFilter(const json& v, const std::string& path) {
  requireObject(v, path);
  HttpFilter f;
  f.name = getString(v, path, "name");
  std::string type = getString(v, path, "type");
  if (type == "router") {
    f.type = HttpFilter::Type::Router;
  } else if (type == "golang") {
    f.type = HttpFilter::Type::Golang;
    std::string gp = path + ".golang";
    const json& g = member(v, path, "golang");
    requireObject(g, gp);
    f.golang.library_id = getString(g, gp, "library_id");
    f.golang.library_path = getString(g, gp, "library_path");
    f.golang.plugin_name = getString(g, gp, "plugin_name");
    f.golang.plugin_config_any =
        decodeBase64(getStringOr(g, gp, "plugin_config", ""), gp + ".plugin_config");
    if (const json* s = optionalMember(g, "secrets")) {
      requireObject(*s, gp + ".secrets");
      for (auto& [name, val] : s->items()) {
        if (!val.is_string()) fail(gp + ".secrets." + name, "expected a base64 string");
        f.golang.secrets[name] = decodeBase64(val.get<std::string>(), gp + ".secrets." + name);
      }
    }
  } else {
    fail(path + ".type", "unknown http filter type \"" + type + "\"");
  }
  return f;
}

ConfigSource parseConfigSource(const json& v, const std::string& path) {
  requireObject(v, path);
  ConfigSource cs;
  cs.path = getString(v, path, "path");
  cs.watched_directory = getStringOr(v, path, "watched_directory", "");
  cs.watch_modify = getBool(v, path, "watch_modify", false);
  if (cs.path.empty()) fail(path + ".path", "must not be empty");
  return cs;
}

HttpConnectionManager parseHcm(const json& v, const std::string& path) {
  requireObject(v, path);
  HttpConnectionManager h;
  h.stat_prefix = getStringOr(v, path, "stat_prefix", "");
  h.max_request_headers_kb = static_cast<uint32_t>(getUint(v, path, "max_request_headers_kb", 8192, 60));
  h.request_timeout_ms = getUint(v, path, "request_timeout_ms", UINT64_MAX, 0);
  h.request_headers_timeout_ms = getUint(v, path, "request_headers_timeout_ms", UINT64_MAX, 0);
  h.stream_idle_timeout_ms = getUint(v, path, "stream_idle_timeout_ms", UINT64_MAX, 300000);
  h.flush_access_log_on_new_request = getBool(v, path, "flush_access_log_on_new_request", false);
  h.access_log_flush_interval_ms = getUint(v, path, "access_log_flush_interval_ms", UINT64_MAX, 0);
  h.normalize_path = getBool(v, path, "normalize_path", false);
  h.merge_slashes = getBool(v, path, "merge_slashes", false);
  using Action = HttpConnectionManager::EscapedSlashesAction;
  std::string action = getStringOr(v, path, "path_with_escaped_slashes_action", "KEEP_UNCHANGED");
  if (action == "KEEP_UNCHANGED") h.path_with_escaped_slashes_action = Action::KeepUnchanged;
  else if (action == "REJECT_REQUEST") h.path_with_escaped_slashes_action = Action::RejectRequest;
  else if (action == "UNESCAPE_AND_REDIRECT") h.path_with_escaped_slashes_action = Action::UnescapeAndRedirect;
  else if (action == "UNESCAPE_AND_FORWARD") h.path_with_escaped_slashes_action = Action::UnescapeAndForward;
  else fail(path + ".path_with_escaped_slashes_action", "unknown action \"" + action + "\"");
  std::string strip = getStringOr(v, path, "strip_port", "NONE");
  if (strip == "NONE") h.strip_port = HttpConnectionManager::StripPort::None;
  else if (strip == "MATCHING_HOST") h.strip_port = HttpConnectionManager::StripPort::MatchingHost;
  else if (strip == "ANY") h.strip_port = HttpConnectionManager::StripPort::Any;
  else fail(path + ".strip_port", "unknown mode \"" + strip + "\"");
  h.strip_trailing_host_dot = getBool(v, path, "strip_trailing_host_dot", false);
  forEach(v, path, "http_filters", true,
          [&](const json& f, const std::string& fp) { h.http_filters.push_back(parseHttpFilter(f, fp)); });
  if (const json* r = optionalMember(v, "rds")) {
    std::string rp = path + ".rds";
    requireObject(*r, rp);
    Rds rds;
    rds.route_config_name = getString(*r, rp, "route_config_name");
    rds.config_source = parseConfigSource(member(*r, rp, "config_source"), rp + ".config_source");
    h.rds = std::move(rds);
  }
  if (const json* rc = optionalMember(v, "route_config")) {
    h.route_config = parseRouteConfig(*rc, path + ".route_config");
  } else if (!h.rds) {
    fail(path + ".route_config", "missing");
  }
  forEach(v, path, "access_log", false,
          [&](const json& a, const std::string& ap) { h.access_log.push_back(parseAccessLog(a, ap)); });
  forEach(v, path, "upgrade_configs", false,
          [&](const json& u, const std::string& up) { h.upgrade_configs.push_back(parseUpgradeConfig(u, up)); });
  return h;
}

Listener parseListener(const json& l, const std::string& lp) {
  requireObject(l, lp);
  Listener out;
  out.name = getString(l, lp, "name");
  out.hash = getStringOr(l, lp, "hash", "");
  out.dump = getStringOr(l, lp, "dump", "");
  out.route_config_dump = getStringOr(l, lp, "route_config_dump", "");
  out.address = parseAddress(member(l, lp, "address"), lp + ".address");
  out.per_connection_buffer_limit_bytes = static_cast<uint32_t>(
      getUint(l, lp, "per_connection_buffer_limit_bytes", UINT32_MAX, 1024 * 1024));
  out.hcm = parseHcm(member(l, lp, "hcm"), lp + ".hcm");
  return out;
}

ClusterConfig parseCluster(const json& v, const std::string& path) {
  requireObject(v, path);
  ClusterConfig c;
  c.name = getString(v, path, "name");
  c.hash = getStringOr(v, path, "hash", "");
  c.dump = getStringOr(v, path, "dump", "");
  std::string type = getStringOr(v, path, "type", "STATIC");
  if (type == "STATIC") c.type = ClusterConfig::Type::Static;
  else if (type == "STRICT_DNS") c.type = ClusterConfig::Type::StrictDns;
  else fail(path + ".type", "unsupported cluster type \"" + type + "\"");
  c.connect_timeout_ms = getUint(v, path, "connect_timeout_ms", UINT64_MAX, 5000);
  c.dns_refresh_rate_ms = getUint(v, path, "dns_refresh_rate_ms", UINT64_MAX, 5000);
  c.per_connection_buffer_limit_bytes =
      static_cast<uint32_t>(getUint(v, path, "per_connection_buffer_limit_bytes", UINT32_MAX, 1024 * 1024));
  forEach(v, path, "endpoints", false,
          [&](const json& e, const std::string& ep) { c.endpoints.push_back(parseAddress(e, ep)); });
  return c;
}

} // namespace

Bootstrap parseJson(const std::string& text) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number that overflows while parsing ("9E901").
    throw std::runtime_error(std::string("compiled bootstrap: invalid JSON: ") + e.what());
  }
  try {
    requireObject(root, "$");
    Bootstrap b;
    if (const json* a = optionalMember(root, "admin")) {
      Admin admin;
      admin.address = parseAddress(*a, "$.admin");
      b.admin = admin;
    }
    forEach(root, "$", "listeners", true,
            [&](const json& l, const std::string& lp) { b.listeners.push_back(parseListener(l, lp)); });
    forEach(root, "$", "clusters", false,
            [&](const json& c, const std::string& cp) { b.clusters.push_back(parseCluster(c, cp)); });
    if (const json* d = optionalMember(root, "dynamic_resources")) {
      requireObject(*d, "$.dynamic_resources");
      if (const json* l = optionalMember(*d, "lds"))
        b.dynamic_resources.lds = parseConfigSource(*l, "$.dynamic_resources.lds");
      if (const json* c = optionalMember(*d, "cds"))
        b.dynamic_resources.cds = parseConfigSource(*c, "$.dynamic_resources.cds");
    }
    if (optionalMember(root, "config_dump")) {
      // Re-read in document order: the dump keeps Envoy's (proto) field order.
      b.config_dump = nlohmann::ordered_json::parse(text)["config_dump"].dump(2) + "\n";
    }
    return b;
  } catch (const json::exception& e) {
    // Type errors nlohmann raises past our checks (e.g. integer overflow).
    throw std::runtime_error(std::string("compiled bootstrap: ") + e.what());
  }
}

Resources parseResourcesJson(const std::string& text) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number that overflows while parsing ("9E901").
    throw std::runtime_error(std::string("compiled resources: invalid JSON: ") + e.what());
  }
  try {
    requireObject(root, "$");
    Resources r;
    r.version_info = getStringOr(root, "$", "version_info", "");
    forEach(root, "$", "listeners", false,
            [&](const json& l, const std::string& lp) { r.listeners.push_back(parseListener(l, lp)); });
    forEach(root, "$", "clusters", false,
            [&](const json& c, const std::string& cp) { r.clusters.push_back(parseCluster(c, cp)); });
    forEach(root, "$", "route_configs", false, [&](const json& rc, const std::string& rp) {
      r.route_configs.push_back(parseRouteConfig(rc, rp));
    });
    return r;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("compiled resources: ") + e.what());
  }
}

} // namespace moe::bootstrap
