// Per-worker, per-cluster HTTP/1.1 connection pool (Envoy: source/common/http/http1/conn_pool.cc
// and source/common/conn_pool/conn_pool_base.cc, much reduced): one request per connection at a
// time, idle keep-alive connections reused per endpoint, a connect timeout, and failures always
// reported from the event loop, never inline from newRequest().
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <chrono>
#include <unordered_set>

#include "dispatcher.h"
#include "http1_codec.h"
#include "upstream.h"

struct bufferevent;

namespace moe {

class ConnPool;
class UpstreamConnection;

// The caller's handle on one upstream request.
class UpstreamRequestImpl : public UpstreamRequest {
public:
  UpstreamRequestImpl(Dispatcher& dispatcher, UpstreamCallbacks& cb);
  ~UpstreamRequestImpl() override;

  void encodeHeaders(const HeaderMap& headers, bool end_stream) override;
  void encodeData(Buffer& data, bool end_stream) override;
  void encodeTrailers(const HeaderMap& trailers) override;
  void reset() override;
  void readDisable(bool disable) override;

  // Posts cb to the worker unless this request is gone by then.
  void postIfAlive(std::function<void(UpstreamRequestImpl&)> fn);

private:
  friend class UpstreamConnection;
  friend class ConnPool;
  void detachConnection();

  Dispatcher& dispatcher_;
  UpstreamCallbacks& cb_;
  UpstreamConnection* conn_ = nullptr;  // nullptr when not bound, finished, or failed
  RequestSerializer serializer_;
  // An upgrade the connection manager allowed: only then may the serializer keep
  // connection/upgrade and leave the payload unframed (a filter that adds those headers to an
  // ordinary request does not turn its body into unframed bytes).
  bool upgrade_ = false;
  bool done_ = false;                   // response complete, failed, or reset: no more callbacks
  std::shared_ptr<bool> alive_;         // false after destruction; checked by posted callbacks
};

// One upstream TCP connection with its response parser.
class UpstreamConnection : public ResponseParserCallbacks {
public:
  UpstreamConnection(ConnPool& pool, Dispatcher& dispatcher, const Endpoint& endpoint,
                     uint64_t connect_timeout_ms);
  // Starts the non-blocking connect; false (with the errno in *error) when it failed
  // immediately, the test-only loopback guard included (the caller reports it).
  bool connect(int* error);
  void attach(UpstreamRequestImpl* request);
  void write(const std::string& data);
  void readDisable(bool disable);
  // The request was reset or destroyed before its response completed.
  void abandon();
  const std::string& host() const { return host_; }
  const Endpoint& endpoint() const { return endpoint_; }
  bool closed() const { return closed_; }

  // ResponseParserCallbacks
  void onResponseHeaders(HeaderMapPtr headers, bool end_stream) override;
  void onResponseData(Buffer& data, bool end_stream) override;
  void onResponseTrailers(HeaderMapPtr trailers) override;

private:
  ~UpstreamConnection() override;
  static void onReadCb(bufferevent*, void* arg);
  static void onWriteCb(bufferevent*, void* arg);
  static void onEventCb(bufferevent*, short what, void* arg);
  void checkWriteWatermarks();
  void onReadable();
  void onEvent(short what);
  void onConnectTimeout();
  // Detaches the request after its response completed; pools or closes the connection.
  UpstreamCallbacks& completeResponse();
  void fail(UpstreamResetReason reason, const std::string& details);
  void close();

  ConnPool& pool_;
  Dispatcher& dispatcher_;
  Endpoint endpoint_;
  std::string host_;
  uint64_t connect_timeout_ms_;
  bufferevent* bev_ = nullptr;
  TimerPtr connect_timer_;
  ResponseParser parser_;
  UpstreamRequestImpl* request_ = nullptr;
  HostStats& host_stats_;
  std::chrono::steady_clock::time_point connect_start_ = std::chrono::steady_clock::now();
  bool connected_ = false;
  bool closed_ = false;
  // Flow control: reads paused while read_disable_count_ > 0 (bytes already read stay in the
  // input buffer and are parsed after the resume, from resume_timer_); the write buffer's
  // watermarks tell the request above / below (kUpstreamBufferLimit, half of it).
  uint32_t read_disable_count_ = 0;
  TimerPtr resume_timer_;
  bool above_write_high_ = false;
  bool remote_close_ = false;  // the upstream closed it (upstream_cx_destroy_remote)
};

class ConnPool {
public:
  // stats: kept alive by the pool, which a cluster removed or replaced by CDS retires (its
  // connections still count on it).
  ConnPool(Dispatcher& dispatcher, std::string cluster_name, uint64_t connect_timeout_ms,
           std::shared_ptr<ClusterStats> stats);

  // upgrade: on a new connection that is closed after this request, sent as an upgrade.
  UpstreamRequestPtr newRequest(const Endpoint& endpoint, UpstreamCallbacks& cb, bool upgrade);
  // A request that fails from the event loop with reason/details (e.g. strict override host).
  UpstreamRequestPtr failedRequest(UpstreamCallbacks& cb, UpstreamResetReason reason, std::string details);
  // Round robin position for this worker (Envoy's round robin LB is per worker too).
  uint64_t nextRoundRobin() { return rr_++; }

private:
  friend class UpstreamConnection;
  void onConnectionIdle(UpstreamConnection* conn);
  void onConnectionClosed(UpstreamConnection* conn);
  void countConnectFailure(bool timeout, HostStats& host);
  // cluster.<name>.upstream_cx_protocol_error
  void countProtocolError();

  Dispatcher& dispatcher_;
  const std::string cluster_name_;
  const std::shared_ptr<ClusterStats> stats_owner_;
  ClusterStats& stats_;
  const uint64_t connect_timeout_ms_;
  std::map<std::string, std::list<UpstreamConnection*>> idle_;  // endpoint str -> idle conns
  std::unordered_set<UpstreamConnection*> all_;
  uint64_t rr_ = 0;
};

} // namespace moe
