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
  // --component-log-level name:level,... applied after -l.
  std::vector<std::pair<std::string, uint32_t>> component_log_levels;
  std::string log_path;        // --log-path ("" = stderr)
  uint64_t drain_time_ms = 5000; // --drain-time-s: how long SIGTERM waits for in-flight streams
  // --mode: serve (default), validate (check the config, print "configuration '<path>' OK", exit
  // 0/1 without serving), init_only (initialize everything, listeners included, then exit 0).
  enum class Mode { Serve, Validate, InitOnly } mode = Mode::Serve;
  // Access log files (source/common/access_log/access_log_manager_impl.cc): the flush thread
  // writes at least every interval, or sooner once this much is buffered.
  uint64_t file_flush_interval_ms = 10000; // --file-flush-interval-msec
  uint64_t file_flush_min_size_kb = 64;    // --file-flush-min-size-kb
  std::string service_cluster, service_node, service_zone; // --service-* (shown in /server_info)
  std::string admin_address_path; // --admin-address-path: the admin "ip:port" is written there
  // --stats-tag name:value: a tag every stat carries (TagProducerImpl's cli tags).
  std::vector<std::pair<std::string, std::string>> stats_tags;
  std::string program;         // argv[0], as TCLAP names the program in its output
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
  // The address the listener is bound to (its stats are named after it), before any worker
  // accepts for this factory (listener_manager.cc).
  virtual void setListenerAddress(const std::string& ip, uint16_t port) = 0;

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
