// The server: options, workers, cluster manager. main.cc owns it; the connection manager side
// (conn_manager.*) plugs in through HttpConnectionManagerFactory.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "codec.h"
#include "dispatcher.h"
#include "upstream.h"

namespace moe {

struct Options {
  std::string config_path;     // -c
  uint32_t concurrency = 1;    // --concurrency (default: 1 here; Envoy defaults to #cores)
  uint32_t log_level = 2;      // -l (info)
  uint64_t drain_time_ms = 5000; // --drain-time-s: how long SIGTERM waits for in-flight streams
};

class Server {
public:
  virtual ~Server() = default;
  virtual const Options& options() const = 0;
  virtual ClusterManager& clusterManager() = 0;
  virtual Dispatcher& mainDispatcher() = 0;
  virtual uint32_t concurrency() const = 0;
  virtual Dispatcher& worker(uint32_t id) = 0;
  // True once SIGINT/SIGTERM was received: connection managers add "connection: close" to
  // responses and the codec stops keep-alive.
  virtual bool draining() const = 0;
};

// One per listener. Created on the main thread before workers start; builds the route table and
// the http filter chain, dlopens golang libraries and parses their configs (a rejected config
// throws std::runtime_error, and the host exits non-zero at startup, as Envoy does).
class HttpConnectionManagerFactory : public std::enable_shared_from_this<HttpConnectionManagerFactory> {
public:
  virtual ~HttpConnectionManagerFactory() = default;
  // Called on the worker thread for each accepted connection.
  virtual std::unique_ptr<ServerConnectionCallbacks>
  createConnectionManager(Dispatcher& worker, const ConnectionInfo& conn) = 0;
  // Limits the codec applies (max_request_headers_kb).
  virtual uint32_t maxRequestHeadersBytes() const = 0;

  // The listener (version) this factory serves is draining: a newer version replaced it or it
  // was removed (listener_manager.cc). Thread-safe.
  void startDrain(uint64_t drain_time_ms);
  // Envoy's DrainManagerImpl::drainClose with the gradual strategy: false until the drain
  // starts, then true with probability elapsed / drain time (always true once it is over, or
  // with a drain time of 0). Asked for each response on the worker thread: true makes an
  // HTTP/1 response carry "connection: close".
  bool drainClose() const;

private:
  std::atomic<int64_t> drain_start_ns_{0}; // steady clock; 0 = not draining
  std::atomic<uint64_t> drain_time_ms_{0};
};

// Creates a listener's factory (main thread). Throws std::runtime_error when a golang config is
// rejected or the library does not load.
std::unique_ptr<HttpConnectionManagerFactory>
createHttpConnectionManagerFactory(const bootstrap::Listener& config, Server& server);

// Number of streams alive in all connection managers (graceful shutdown waits for 0).
int64_t activeDownstreamStreams();

} // namespace moe
