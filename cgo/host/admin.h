// The admin listener on the main dispatcher (Envoy: source/server/admin), on libevent's evhttp.
// A table of handlers as AdminImpl's: prefix, help text, whether it mutates state (then it
// requires POST), its query parameters; /help and the 404 page list them. Handlers:
//   /                      this help (Envoy serves its HTML home page)
//   /clusters              upstream clusters, hosts and their stats (text; ?format=json)
//   /config_dump           static and xDS resources as envoy.admin.v3.ConfigDump JSON
//   /help                  the admin commands
//   /logging (POST)        list Envoy's loggers and their levels, change them
//   /quitquitquit (POST)   graceful stop
//   /ready                 200 "LIVE\n" (503 "DRAINING\n" once stopping)
//   /reopen_logs (POST)    reopen access log files (as SIGUSR1)
//   /reset_counters (POST) every counter to 0
//   /server_info           envoy.admin.v3.ServerInfo JSON
//   /stats                 text (?format=json|prometheus, ?filter=, ?usedonly, ?type=,
//                          ?histogram_buckets=cumulative|summary)
//   /stats/prometheus      Prometheus text with Envoy's tag extraction
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

struct evhttp;
struct evhttp_request;

namespace moe {

class DispatcherImpl;
class ClusterManager;
struct Options;

class AdminServer {
public:
  struct Hooks {
    std::function<void()> quit;          // graceful stop, run on the main dispatcher
    std::function<bool()> draining;
    std::function<void()> reopen_logs;   // POST /reopen_logs
    const Options* options = nullptr;
    ClusterManager* cluster_manager = nullptr;
    std::function<std::string()> config_dump; // the /config_dump body (config_dump.h)
  };
  AdminServer(DispatcherImpl& main, Hooks hooks);
  ~AdminServer();
  // Binds ip:port (0 = pick); returns the bound port. Throws std::runtime_error.
  uint16_t start(const std::string& ip, uint16_t port);

  // A query string split into its parameters, decoded (Http::Utility::QueryParamsMulti).
  using Query = std::map<std::string, std::vector<std::string>>;
  struct Response {
    int code = 200;
    std::string body;
    std::string content_type = "text/plain; charset=UTF-8";
  };

private:
  struct Handler {
    std::string prefix, help;
    bool mutates;
    std::vector<std::pair<std::string, std::string>> params;  // id, help
    std::function<Response(const Query&)> fn;
  };
  static void onRequest(evhttp_request* req, void* arg);
  void handle(evhttp_request* req);
  std::string help() const;

  Response serverInfo() const;
  Response statsHandler(const Query& q, bool prometheus) const;
  Response clusters(const Query& q) const;
  Response logging(const Query& q) const;

  DispatcherImpl& main_;
  Hooks hooks_;
  std::vector<Handler> handlers_;
  evhttp* http_ = nullptr;
  const uint64_t start_time_;
};

} // namespace moe
