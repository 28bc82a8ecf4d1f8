#include "admin.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "dispatcher_impl.h"
#include "logger.h"
#include "server.h"
#include "stats.h"
#include "upstream.h"
#include "version.h"

namespace moe {

namespace {

const char* reasonFor(int code) {
  switch (code) {
  case 200: return "OK";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 503: return "Service Unavailable";
  default: return "Unknown";
  }
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// PercentEncoding::urlDecodeQueryParameter: %XX and '+' as a space.
std::string urlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && hexValue(s[i + 1]) >= 0 && hexValue(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hexValue(s[i + 1]) * 16 + hexValue(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// QueryParamsMulti::parseAndDecodeQueryString: "a=1&b&c=3"; a parameter without '=' has an
// empty value (Envoy's ?usedonly).
AdminServer::Query parseQuery(const char* query) {
  AdminServer::Query q;
  if (query == nullptr) return q;
  std::string_view s(query);
  while (!s.empty()) {
    size_t amp = s.find('&');
    std::string_view part = s.substr(0, amp);
    s = amp == std::string_view::npos ? std::string_view() : s.substr(amp + 1);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    std::string key = urlDecode(part.substr(0, eq));
    std::string value = eq == std::string_view::npos ? "" : urlDecode(part.substr(eq + 1));
    q[key].push_back(value);
  }
  return q;
}

std::optional<std::string> first(const AdminServer::Query& q, const std::string& key) {
  auto it = q.find(key);
  if (it == q.end() || it->second.empty()) return std::nullopt;
  return it->second.front();
}

// A google.protobuf.Duration in its JSON form ("5s", "0.100s").
std::string formatSeconds(uint64_t ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  char buf[64];
  snprintf(buf, sizeof(buf), "%llu.%03llus", static_cast<unsigned long long>(ms / 1000),
           static_cast<unsigned long long>(ms % 1000));
  return buf;
}

AdminServer::Response text(int code, std::string body) {
  AdminServer::Response r;
  r.code = code;
  r.body = std::move(body);
  return r;
}

AdminServer::Response json(std::string body) {
  AdminServer::Response r;
  r.body = std::move(body);
  r.content_type = "application/json";
  return r;
}

} // namespace

AdminServer::AdminServer(DispatcherImpl& main, Hooks hooks)
    : main_(main), hooks_(std::move(hooks)), start_time_(static_cast<uint64_t>(time(nullptr))) {
  // AdminImpl's handlers (admin.cc), the ones moe-host has, with Envoy's help texts.
  handlers_ = {
      {"/", "Admin home page", false, {}, [this](const Query&) { return text(200, help()); }},
      {"/clusters", "upstream cluster status", false,
       {{"filter", "Regular expression (Google re2) for filtering clusters by name"}},
       [this](const Query& q) { return clusters(q); }},
      {"/config_dump", "dump current Envoy configs", false, {},
       [this](const Query&) { return json(hooks_.config_dump ? hooks_.config_dump() : "{\"configs\": []}\n"); }},
      {"/help", "print out list of admin commands", false, {}, [this](const Query&) { return text(200, help()); }},
      {"/logging", "query/change logging levels", true,
       {{"paths", "Change multiple logging levels by setting to <logger_name1>:<desired_level1>,<logger_name2>:<desired_level2>. If fine grain logging is enabled, use __FILE__ or a glob experision as the logger name. For example, source/common*:warning"},
        {"level", "desired logging level, this will change all loggers's level; One of (, trace, debug, info, warning, error, critical, off)"}},
       [this](const Query& q) { return logging(q); }},
      {"/quitquitquit", "exit the server", true, {},
       [this](const Query&) {
         MOE_LOG(Info, "admin", "quitquitquit: stopping");
         // From a fresh event: the reply must be written before anything starts closing.
         if (hooks_.quit) main_.post(hooks_.quit);
         return text(200, "OK\n");
       }},
      {"/ready", "print server state, return 200 if LIVE, otherwise return 503", false, {},
       [this](const Query&) {
         if (hooks_.draining && hooks_.draining()) return text(503, "DRAINING\n");
         return text(200, "LIVE\n");
       }},
      {"/reopen_logs", "reopen access logs", true, {},
       [this](const Query&) {
         if (hooks_.reopen_logs) hooks_.reopen_logs();
         return text(200, "OK\n");
       }},
      {"/reset_counters", "reset all counters to zero", true, {},
       [](const Query&) {
         stats().resetCounters();
         return text(200, "OK\n");
       }},
      {"/server_info", "print server version/status information", false, {},
       [this](const Query&) { return serverInfo(); }},
      {"/stats", "print server stats", false,
       {{"usedonly", "Only include stats that have been written by system since restart"},
        {"filter", "Regular expression (Google re2) for filtering stats"},
        {"format", "Format to use; One of (text, json, prometheus)"},
        {"type", "Stat types to include.; One of (All, Counters, Histograms, Gauges)"},
        {"histogram_buckets", "Histogram bucket display mode; One of (cumulative, summary, none)"}},
       [this](const Query& q) { return statsHandler(q, false); }},
      {"/stats/prometheus", "print server stats in prometheus format", false,
       {{"usedonly", "Only include stats that have been written by system since restart"},
        {"filter", "Regular expression (Google re2) for filtering stats"},
        {"histogram_buckets", "Histogram bucket display mode; One of (cumulative, summary)"}},
       [this](const Query& q) { return statsHandler(q, true); }},
  };
}

AdminServer::~AdminServer() {
  if (http_ != nullptr) evhttp_free(http_);
}

uint16_t AdminServer::start(const std::string& ip, uint16_t port) {
  http_ = evhttp_new(main_.base());
  evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                        EVHTTP_REQ_DELETE);
  evhttp_set_gencb(http_, &AdminServer::onRequest, this);
  evhttp_bound_socket* sock = evhttp_bind_socket_with_handle(http_, ip.c_str(), port);
  if (sock == nullptr) throw std::runtime_error("admin: cannot bind " + ip + ":" + std::to_string(port));
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  getsockname(evhttp_bound_socket_get_fd(sock), reinterpret_cast<sockaddr*>(&ss), &len);
  return ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

void AdminServer::onRequest(evhttp_request* req, void* arg) { static_cast<AdminServer*>(arg)->handle(req); }

// AdminImpl::getHelp: the handlers sorted by prefix, " (POST)" for the mutating ones, then
// their parameters.
std::string AdminServer::help() const {
  std::vector<const Handler*> sorted;
  for (auto& h : handlers_) sorted.push_back(&h);
  std::sort(sorted.begin(), sorted.end(), [](const Handler* a, const Handler* b) { return a->prefix < b->prefix; });
  std::string out = "admin commands are:\n";
  for (auto* h : sorted) {
    out += "  " + h->prefix + (h->mutates ? " (POST)" : "") + ": " + h->help + "\n";
    for (auto& [id, param_help] : h->params) out += "      " + id + ": " + param_help + "\n";
  }
  return out;
}

void AdminServer::handle(evhttp_request* req) {
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
  const char* p = uri != nullptr ? evhttp_uri_get_path(uri) : nullptr;
  const std::string path = p != nullptr ? p : "/";
  const Query query = parseQuery(uri != nullptr ? evhttp_uri_get_query(uri) : nullptr);
  const auto method = evhttp_request_get_command(req);

  Response r;
  const Handler* handler = nullptr;
  for (auto& h : handlers_) {
    if (h.prefix == path) handler = &h;
  }
  if (handler == nullptr) {
    // Extra space: "invalid path." is a sentence of its own before "admin commands are:".
    r = text(404, "invalid path. " + help());
  } else if (handler->mutates && method != EVHTTP_REQ_POST) {
    // AdminImpl::makeRequest: a handler that mutates state requires POST.
    const char* m = method == EVHTTP_REQ_GET ? "GET" : method == EVHTTP_REQ_HEAD ? "HEAD"
                    : method == EVHTTP_REQ_PUT ? "PUT" : "DELETE";
    MOE_LOG(Error, "admin", "admin path \"%s\" mutates state, method=%s rather than POST", handler->prefix.c_str(), m);
    r = text(405, std::string("Method ") + m + " not allowed, POST required.");
  } else {
    r = handler->fn(query);
  }
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  evhttp_add_header(out, "content-type", r.content_type.c_str());
  evhttp_add_header(out, "cache-control", "no-cache, max-age=0");
  evhttp_add_header(out, "x-content-type-options", "nosniff");
  evbuffer* buf = evbuffer_new();
  evbuffer_add(buf, r.body.data(), r.body.size());
  evhttp_send_reply(req, r.code, reasonFor(r.code), buf);
  evbuffer_free(buf);
}

// StatsParams::parse and StatsHandler (stats_params.cc, stats_handler.cc).
AdminServer::Response AdminServer::statsHandler(const Query& q, bool prometheus) const {
  Store::Params params;
  params.used_only = q.count("usedonly") > 0;
  if (auto f = first(q, "filter"); f && !f->empty()) {
    try {
      params.filter.emplace(*f, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return text(400, std::string("Invalid re2 regex: ") + e.what());
    }
  }
  if (auto b = first(q, "histogram_buckets"); b && !b->empty()) {
    if (*b == "cumulative") params.buckets = Store::Params::Buckets::Cumulative;
    else if (*b == "summary") params.buckets = Store::Params::Buckets::Summary;
    else if (*b == "none") params.buckets = Store::Params::Buckets::Unset;
    else return text(400, "usage: /stats?histogram_buckets=(cumulative|summary|none)\n");
  }
  if (auto t = first(q, "type"); t && !t->empty()) {
    if (*t == "All") params.type = Store::Params::Type::All;
    else if (*t == "Counters") params.type = Store::Params::Type::Counters;
    else if (*t == "Gauges") params.type = Store::Params::Type::Gauges;
    else if (*t == "Histograms") params.type = Store::Params::Type::Histograms;
    else return text(400, "invalid &type= param");
  }
  std::string format = prometheus ? "prometheus" : "text";
  if (auto f = first(q, "format"); f && !f->empty() && !prometheus) {
    if (*f != "prometheus" && *f != "json" && *f != "text")
      return text(400, "usage: /stats?format=(json|prometheus|text)\n\n");
    format = *f;
  }
  if (format == "prometheus") return text(200, stats().renderPrometheus(params));
  if (format == "json") return json(stats().renderJson(params));
  return text(200, stats().renderText(params));
}

// ClustersHandler (clusters_handler.cc): text (one "cluster::..." line per fact) or
// envoy.admin.v3.Clusters JSON. Circuit breakers are Envoy's defaults (moe-host has no
// circuit_breakers config); hosts are healthy, weight 1, no locality, no outlier detection.
AdminServer::Response AdminServer::clusters(const Query& q) const {
  std::optional<std::regex> filter;
  if (auto f = first(q, "filter"); f && !f->empty()) {
    try {
      filter.emplace(*f, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      return text(400, "Invalid re2 regex");
    }
  }
  std::vector<ClusterSharedPtr> all = hooks_.cluster_manager ? hooks_.cluster_manager->all() : std::vector<ClusterSharedPtr>{};
  const bool as_json = first(q, "format").value_or("") == "json";
  nlohmann::ordered_json statuses = nlohmann::ordered_json::array();
  std::string out;
  for (const ClusterSharedPtr& c : all) {
    const std::string& name = c->name();
    if (filter && !std::regex_search(name, *filter)) continue;
    auto hosts = c->stats().hosts();
    if (as_json) {
      nlohmann::ordered_json cs;
      cs["name"] = name;
      cs["observability_name"] = name;
      nlohmann::ordered_json thresholds = nlohmann::ordered_json::array();
      for (const char* prio : {"DEFAULT", "HIGH"}) {
        nlohmann::ordered_json t;
        if (std::string(prio) != "DEFAULT") t["priority"] = prio;  // proto3 JSON omits the default enum
        t["max_connections"] = 1024;
        t["max_pending_requests"] = 1024;
        t["max_requests"] = 1024;
        t["max_retries"] = ClusterStats::kMaxRetries;
        thresholds.push_back(t);
      }
      cs["circuit_breakers"] = {{"thresholds", thresholds}};
      nlohmann::ordered_json hs = nlohmann::ordered_json::array();
      for (auto& [addr, st] : hosts) {
        nlohmann::ordered_json h;
        size_t colon = addr.rfind(':');
        std::string ip = addr.substr(0, colon);
        if (!ip.empty() && ip.front() == '[') ip = ip.substr(1, ip.size() - 2);
        h["address"] = {{"socket_address", {{"address", ip}, {"port_value", std::stoi(addr.substr(colon + 1))}}}};
        nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
        auto counter = [&](const char* n, const Counter& v) {
          nlohmann::ordered_json m;
          m["name"] = n;
          if (v.get() != 0) m["value"] = std::to_string(v.get());  // uint64 as a JSON string
          metrics.push_back(m);
        };
        auto gauge = [&](const char* n, const Gauge& v) {
          nlohmann::ordered_json m;
          m["type"] = "GAUGE";
          m["name"] = n;
          if (v.get() != 0) m["value"] = std::to_string(v.get());
          metrics.push_back(m);
        };
        counter("cx_connect_fail", st->cx_connect_fail);
        counter("cx_total", st->cx_total);
        counter("rq_error", st->rq_error);
        counter("rq_success", st->rq_success);
        counter("rq_timeout", st->rq_timeout);
        counter("rq_total", st->rq_total);
        gauge("cx_active", st->cx_active);
        gauge("rq_active", st->rq_active);
        gauge("rq_pending_active", st->rq_pending_active);
        h["stats"] = metrics;
        h["health_status"] = {{"eds_health_status", "HEALTHY"}};
        h["weight"] = 1;
        h["locality"] = nlohmann::ordered_json::object();
        hs.push_back(h);
      }
      cs["host_statuses"] = hs;
      statuses.push_back(cs);
      continue;
    }
    out += name + "::observability_name::" + name + "\n";
    for (const char* prio : {"default", "high"}) {
      out += name + "::" + prio + "_priority::max_connections::1024\n";
      out += name + "::" + prio + "_priority::max_pending_requests::1024\n";
      out += name + "::" + prio + "_priority::max_requests::1024\n";
      out += name + "::" + prio + "_priority::max_retries::" + std::to_string(ClusterStats::kMaxRetries) + "\n";
    }
    out += name + "::added_via_api::false\n";
    for (auto& [addr, st] : hosts) {
      // The host's stats sorted by name, then its description.
      std::map<std::string, uint64_t> all_stats = {
          {"cx_active", static_cast<uint64_t>(st->cx_active.get())},
          {"cx_connect_fail", st->cx_connect_fail.get()},
          {"cx_total", st->cx_total.get()},
          {"rq_active", static_cast<uint64_t>(st->rq_active.get())},
          {"rq_error", st->rq_error.get()},
          {"rq_pending_active", static_cast<uint64_t>(st->rq_pending_active.get())},
          {"rq_success", st->rq_success.get()},
          {"rq_timeout", st->rq_timeout.get()},
          {"rq_total", st->rq_total.get()}};
      for (auto& [k, v] : all_stats) out += name + "::" + addr + "::" + k + "::" + std::to_string(v) + "\n";
      out += name + "::" + addr + "::hostname::\n";
      out += name + "::" + addr + "::health_flags::healthy\n";
      out += name + "::" + addr + "::weight::1\n";
      out += name + "::" + addr + "::region::\n";
      out += name + "::" + addr + "::zone::\n";
      out += name + "::" + addr + "::sub_zone::\n";
      out += name + "::" + addr + "::canary::false\n";
      out += name + "::" + addr + "::priority::0\n";
      out += name + "::" + addr + "::success_rate::-1\n";
      out += name + "::" + addr + "::local_origin_success_rate::-1\n";
    }
  }
  if (as_json) {
    nlohmann::ordered_json root;
    root["cluster_statuses"] = statuses;
    return json(root.dump(2) + "\n");
  }
  return text(200, out);
}

// LogsHandler::handlerLogging (logs_handler.cc): one parameter changes levels (level=<l> all,
// <logger>=<l> one, paths=<logger>:<l>,... several); then the list of loggers.
AdminServer::Response AdminServer::logging(const Query& q) const {
  std::string active_key, active_value;
  int active = 0;
  for (auto& [k, vs] : q) {
    if (vs.empty() || vs[0].empty()) continue;
    active++;
    active_key = k;
    active_value = vs[0];
  }
  std::string error;
  if (active > 1) {
    error = "invalid number of parameters";
  } else if (active == 1) {
    uint32_t level;
    if (active_key == "level") {
      if (!parseLogLevel(active_value, &level)) error = "unknown logger level";
      else setAllLogLevels(level);
    } else if (active_key == "paths") {
      std::vector<std::pair<Logger*, uint32_t>> changes;
      std::stringstream ss(active_value);
      std::string item;
      while (error.empty() && std::getline(ss, item, ',')) {
        item.erase(0, item.find_first_not_of(' '));
        if (item.empty()) continue;
        size_t colon = item.find(':');
        std::string name = item.substr(0, colon), lv = colon == std::string::npos ? "" : item.substr(colon + 1);
        if (name.empty() || lv.empty()) { error = "empty logger name or empty logger level"; break; }
        if (!parseLogLevel(lv, &level)) { error = "unknown logger level"; break; }
        Logger* l = findLogger(name);
        if (l == nullptr) { error = "unknown logger name"; break; }
        changes.emplace_back(l, level);
      }
      if (error.empty()) {
        for (auto& [l, lv] : changes) {
          MOE_LOG(Info, "admin", "change log level: name='%s' level='%s'", l->name, logLevelName(lv));
          l->level.store(lv);
        }
      }
    } else if (active_key == "group") {
      error = "group parameter requires fine-grain logging to be enabled";
    } else {
      Logger* l = findLogger(active_key);
      if (!parseLogLevel(active_value, &level)) error = "unknown logger level";
      else if (l == nullptr) error = "unknown logger name";
      else {
        MOE_LOG(Info, "admin", "change log level: name='%s' level='%s'", l->name, logLevelName(level));
        l->level.store(level);
      }
    }
  }
  std::string out;
  int code = 200;
  if (!error.empty()) {
    code = 400;
    out += "error: " + error + "\n\n";
    out += "usage: /logging?<name>=<level> (change single level)\n";
    out += "usage: /logging?paths=name1:level1,name2:level2,... (change multiple levels)\n";
    out += "usage: /logging?level=<level> (change all levels)\n";
    out += "usage: /logging?group=<group_name>:<level> (change group of loggers)\n";
    out += "levels: ";
    for (uint32_t l = Trace; l <= Off; l++) out += std::string(logLevelName(l)) + " ";
    out += "\n";
  }
  out += "active loggers:\n";
  for (Logger* l : loggers()) out += std::string("  ") + l->name + ": " + logLevelName(l->level.load()) + "\n";
  out += "\n";
  return text(code, out);
}

// server_info_handler.cc handlerServerInfo: envoy.admin.v3.ServerInfo as (pretty) JSON.
AdminServer::Response AdminServer::serverInfo() const {
  nlohmann::ordered_json info;
  const bool draining = hooks_.draining && hooks_.draining();
  const std::string uptime = std::to_string(static_cast<uint64_t>(time(nullptr)) - start_time_) + "s";
  info["version"] = hostVersion();
  info["state"] = draining ? "DRAINING" : "LIVE";
  info["hot_restart_version"] = "disabled";
  nlohmann::ordered_json opts = nlohmann::ordered_json::object();
  if (const Options* o = hooks_.options) {
    opts["concurrency"] = o->concurrency;
    opts["config_path"] = o->config_path;
    opts["log_level"] = logLevelName(o->log_level);
    opts["log_path"] = o->log_path;
    opts["service_cluster"] = o->service_cluster;
    opts["service_node"] = o->service_node;
    opts["service_zone"] = o->service_zone;
    opts["mode"] = o->mode == Options::Mode::Serve ? "Serve" : o->mode == Options::Mode::Validate ? "Validate" : "InitOnly";
    opts["disable_hot_restart"] = true;
    opts["file_flush_interval"] = formatSeconds(o->file_flush_interval_ms);
    opts["file_flush_min_size_kb"] = o->file_flush_min_size_kb;
    opts["drain_time"] = formatSeconds(o->drain_time_ms);
    nlohmann::ordered_json tags = nlohmann::ordered_json::array();
    for (auto& [k, v] : o->stats_tags) tags.push_back(k + ":" + v);
    opts["stats_tag"] = tags;
  }
  info["command_line_options"] = opts;
  nlohmann::ordered_json node = nlohmann::ordered_json::object();
  if (const Options* o = hooks_.options) {
    if (!o->service_node.empty()) node["id"] = o->service_node;
    if (!o->service_cluster.empty()) node["cluster"] = o->service_cluster;
  }
  node["user_agent_name"] = "envoy";
  info["node"] = node;
  info["uptime_current_epoch"] = uptime;
  info["uptime_all_epochs"] = uptime;
  return json(info.dump(2) + "\n");
}

} // namespace moe
