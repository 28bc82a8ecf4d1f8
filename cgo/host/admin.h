// The admin listener on the main dispatcher (Envoy: source/server/admin), on libevent's evhttp:
//   GET  /ready            200 "LIVE\n" (503 "DRAINING\n" once stopping, as Envoy does)
//   GET  /stats            Store::renderText(), ?filter=<regex> keeps matching lines,
//                          ?format=prometheus is the same as /stats/prometheus
//   GET  /stats/prometheus Store::renderPrometheus()
//   GET  /server_info      minimal JSON
//   POST /quitquitquit     200 "OK\n", then a graceful stop
#pragma once
#include <cstdint>
#include <functional>
#include <string>

struct evhttp;
struct evhttp_request;

namespace moe {

class DispatcherImpl;
struct Options;

class AdminServer {
public:
  struct Hooks {
    std::function<void()> quit;          // graceful stop, run on the main dispatcher
    std::function<bool()> draining;
    const Options* options = nullptr;
  };
  AdminServer(DispatcherImpl& main, Hooks hooks);
  ~AdminServer();
  // Binds ip:port (0 = pick); returns the bound port. Throws std::runtime_error.
  uint16_t start(const std::string& ip, uint16_t port);

private:
  static void onRequest(evhttp_request* req, void* arg);
  void handle(evhttp_request* req);
  std::string serverInfo() const;

  DispatcherImpl& main_;
  Hooks hooks_;
  evhttp* http_ = nullptr;
  const uint64_t start_time_;
};

} // namespace moe
