#include "admin.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <nlohmann/json.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ctime>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "dispatcher_impl.h"
#include "logger.h"
#include "stats.h"
#include "server.h"
#include "version.h"

namespace moe {

namespace {

void reply(evhttp_request* req, int code, const char* reason, const std::string& body,
           const char* content_type = "text/plain; charset=UTF-8") {
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  evhttp_add_header(out, "content-type", content_type);
  evbuffer* buf = evbuffer_new();
  evbuffer_add(buf, body.data(), body.size());
  evhttp_send_reply(req, code, reason, buf);
  evbuffer_free(buf);
}

std::string queryParam(const evhttp_uri* uri, const char* key) {
  const char* query = evhttp_uri_get_query(uri);
  if (query == nullptr) return "";
  evkeyvalq params;
  if (evhttp_parse_query_str(query, &params) != 0) return "";
  const char* v = evhttp_find_header(&params, key);
  std::string out = v != nullptr ? v : "";
  evhttp_clear_headers(&params);
  return out;
}

// /stats?filter=<regex>: keeps the lines whose stat name matches (std::regex search), as
// Envoy's stats handler does with RE2.
std::string filterLines(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    std::string name = line.substr(0, line.find(':'));
    if (std::regex_search(name, re)) out += line + "\n";
  }
  return out;
}

// A google.protobuf.Duration in its JSON form ("5s", "0.100s").
std::string formatSeconds(uint64_t ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  char buf[64];
  snprintf(buf, sizeof(buf), "%llu.%03llus", static_cast<unsigned long long>(ms / 1000),
           static_cast<unsigned long long>(ms % 1000));
  return buf;
}

} // namespace

AdminServer::AdminServer(DispatcherImpl& main, Hooks hooks)
    : main_(main), hooks_(std::move(hooks)), start_time_(static_cast<uint64_t>(time(nullptr))) {}

AdminServer::~AdminServer() {
  if (http_ != nullptr) evhttp_free(http_);
}

uint16_t AdminServer::start(const std::string& ip, uint16_t port) {
  http_ = evhttp_new(main_.base());
  evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD);
  evhttp_set_gencb(http_, &AdminServer::onRequest, this);
  evhttp_bound_socket* sock = evhttp_bind_socket_with_handle(http_, ip.c_str(), port);
  if (sock == nullptr) throw std::runtime_error("admin: cannot bind " + ip + ":" + std::to_string(port));
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  getsockname(evhttp_bound_socket_get_fd(sock), reinterpret_cast<sockaddr*>(&ss), &len);
  return ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

// server_info_handler.cc handlerServerInfo: envoy.admin.v3.ServerInfo as (pretty) JSON.
std::string AdminServer::serverInfo() const {
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
  return info.dump(2) + "\n";
}

void AdminServer::onRequest(evhttp_request* req, void* arg) { static_cast<AdminServer*>(arg)->handle(req); }

void AdminServer::handle(evhttp_request* req) {
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
  const char* p = uri != nullptr ? evhttp_uri_get_path(uri) : nullptr;
  const std::string path = p != nullptr ? p : "/";
  const auto method = evhttp_request_get_command(req);

  if (path == "/ready") {
    if (hooks_.draining && hooks_.draining()) reply(req, 503, "Service Unavailable", "DRAINING\n");
    else reply(req, 200, "OK", "LIVE\n");
    return;
  }
  if (path == "/stats") {
    if (queryParam(uri, "format") == "prometheus") {
      reply(req, 200, "OK", stats().renderPrometheus(), "text/plain; version=0.0.4");
      return;
    }
    std::string text = stats().renderText();
    std::string filter = queryParam(uri, "filter");
    if (!filter.empty()) {
      try {
        text = filterLines(text, filter);
      } catch (const std::regex_error& e) {
        reply(req, 400, "Bad Request", std::string("Invalid regex: ") + e.what() + "\n");
        return;
      }
    }
    reply(req, 200, "OK", text);
    return;
  }
  if (path == "/stats/prometheus") {
    reply(req, 200, "OK", stats().renderPrometheus(), "text/plain; version=0.0.4");
    return;
  }
  if (path == "/server_info") {
    reply(req, 200, "OK", serverInfo(), "application/json");
    return;
  }
  if (path == "/quitquitquit") {
    if (method != EVHTTP_REQ_POST) {
      reply(req, 405, "Method Not Allowed", "This endpoint requires POST\n");
      return;
    }
    reply(req, 200, "OK", "OK\n");
    MOE_LOG(Info, "admin", "quitquitquit: stopping");
    // From a fresh event: the reply above must be written before anything starts closing.
    if (hooks_.quit) main_.post(hooks_.quit);
    return;
  }
  reply(req, 404, "Not Found", "invalid path. admin commands are: /ready /stats /stats/prometheus /server_info /quitquitquit\n");
}

} // namespace moe
