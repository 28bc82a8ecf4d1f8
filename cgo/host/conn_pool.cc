#include "conn_pool.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "logger.h"
#include "stats.h"
#include "upstream_guard.h"

namespace moe {

namespace {
// The cluster's per_connection_buffer_limit_bytes, Envoy's default (1 MiB): the high watermark
// of an upstream connection's write buffer; the low one is half of it.
constexpr size_t kUpstreamBufferLimit = 1024 * 1024;
} // namespace

// ---- UpstreamRequestImpl ----

UpstreamRequestImpl::UpstreamRequestImpl(Dispatcher& dispatcher, UpstreamCallbacks& cb)
    : dispatcher_(dispatcher), cb_(cb), alive_(std::make_shared<bool>(true)) {}

UpstreamRequestImpl::~UpstreamRequestImpl() {
  *alive_ = false;
  detachConnection();
}

void UpstreamRequestImpl::detachConnection() {
  done_ = true;
  if (conn_ != nullptr) {
    UpstreamConnection* c = conn_;
    conn_ = nullptr;
    c->abandon();
  }
}

void UpstreamRequestImpl::readDisable(bool disable) {
  if (conn_ != nullptr && !done_) conn_->readDisable(disable);
}

void UpstreamRequestImpl::encodeHeaders(const HeaderMap& headers, bool end_stream) {
  if (conn_ == nullptr || done_) return;
  std::string out;
  serializer_.encodeHeaders(headers, end_stream, out, upgrade_);
  conn_->write(out);
}

void UpstreamRequestImpl::encodeData(Buffer& data, bool end_stream) {
  if (conn_ == nullptr || done_) {
    data.drainAll();
    return;
  }
  std::string out;
  serializer_.encodeData(data, end_stream, out);
  data.drainAll();
  conn_->write(out);
}

void UpstreamRequestImpl::encodeTrailers(const HeaderMap& trailers) {
  if (conn_ == nullptr || done_) return;
  std::string out;
  serializer_.encodeTrailers(trailers, out);
  conn_->write(out);
}

void UpstreamRequestImpl::reset() { detachConnection(); }

void UpstreamRequestImpl::postIfAlive(std::function<void(UpstreamRequestImpl&)> fn) {
  std::weak_ptr<bool> weak = alive_;
  UpstreamRequestImpl* self = this;
  dispatcher_.post([weak, self, fn = std::move(fn)] {
    auto alive = weak.lock();
    if (alive && *alive) fn(*self);
  });
}

// ---- UpstreamConnection ----

UpstreamConnection::UpstreamConnection(ConnPool& pool, Dispatcher& dispatcher, const Endpoint& endpoint,
                                       uint64_t connect_timeout_ms)
    : pool_(pool), dispatcher_(dispatcher), endpoint_(endpoint), host_(endpoint.str()),
      connect_timeout_ms_(connect_timeout_ms), parser_(*this), host_stats_(pool.stats_.host(host_)) {}

UpstreamConnection::~UpstreamConnection() {
  connect_timer_.reset();
  if (bev_ != nullptr) bufferevent_free(bev_);
}

bool UpstreamConnection::connect(int* error) {
  *error = 0;
  sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  socklen_t len;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, endpoint_.ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(endpoint_.port);
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, endpoint_.ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(endpoint_.port);
    len = sizeof(sockaddr_in6);
  } else {
    *error = EINVAL;
    return false;
  }
  // Test-only: refused before a socket exists, as an egress firewall would refuse the connect
  // (connect(2) fails with EPERM). See upstream_guard.h.
  if (!upstream_guard::allowConnect(reinterpret_cast<sockaddr*>(&ss), host_, pool_.cluster_name_)) {
    *error = EPERM;
    return false;
  }
  bev_ = bufferevent_socket_new(dispatcher_.base(), -1, BEV_OPT_CLOSE_ON_FREE);
  bufferevent_setcb(bev_, &UpstreamConnection::onReadCb, &UpstreamConnection::onWriteCb,
                    &UpstreamConnection::onEventCb, this);
  bufferevent_setwatermark(bev_, EV_WRITE, kUpstreamBufferLimit / 2, 0);
  bufferevent_enable(bev_, EV_READ | EV_WRITE);
  resume_timer_ = dispatcher_.createTimer([this] {
    if (!closed_ && read_disable_count_ == 0) onReadable();
  });
  connect_timer_ = dispatcher_.createTimer([this] { onConnectTimeout(); });
  connect_timer_->enableTimer(std::chrono::milliseconds(connect_timeout_ms_));
  // A refused loopback connect is reported by libevent through the event callback later, not
  // here, so failures arrive from the loop as the contract requires.
  if (bufferevent_socket_connect(bev_, reinterpret_cast<sockaddr*>(&ss), static_cast<int>(len)) != 0) {
    *error = errno != 0 ? errno : ECONNREFUSED;
    return false;
  }
  int one = 1;
  setsockopt(bufferevent_getfd(bev_), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return true;
}

void UpstreamConnection::attach(UpstreamRequestImpl* request) {
  request_ = request;
  request->conn_ = this;
  // The serializer knows the method only after encodeHeaders; HEAD is set then (see write()).
  parser_.reset(false);
}

void UpstreamConnection::write(const std::string& data) {
  if (closed_ || data.empty()) return;
  // The response parser must know about HEAD before the response arrives: no body follows;
  // and about an upgrade: a 101 turns the connection into a pipe.
  if (request_ != nullptr && request_->serializer_.headRequest() && !parser_.started()) parser_.reset(true);
  if (request_ != nullptr && !parser_.started()) parser_.setUpgradeRequest(request_->serializer_.upgradeRequest());
  bufferevent_write(bev_, data.data(), data.size());
  checkWriteWatermarks();
}

// connection_impl.cc write buffer watermarks -> codec_client -> UpstreamRequest
// onAboveWriteBufferHighWatermark (router pauses the downstream) / onBelowWriteBufferLowWatermark.
void UpstreamConnection::checkWriteWatermarks() {
  if (closed_ || bev_ == nullptr) return;
  const size_t pending = evbuffer_get_length(bufferevent_get_output(bev_));
  if (!above_write_high_ && pending > kUpstreamBufferLimit) {
    above_write_high_ = true;
    if (request_ != nullptr) request_->cb_.onUpstreamAboveWriteBufferHighWatermark();
  } else if (above_write_high_ && pending <= kUpstreamBufferLimit / 2) {
    above_write_high_ = false;
    if (request_ != nullptr) request_->cb_.onUpstreamBelowWriteBufferLowWatermark();
  }
}

void UpstreamConnection::onWriteCb(bufferevent*, void* arg) {
  static_cast<UpstreamConnection*>(arg)->checkWriteWatermarks();
}

// Envoy's ConnectionImpl::readDisable: reference-counted; the last enable resumes reading and
// parses what was read before the pause.
void UpstreamConnection::readDisable(bool disable) {
  if (closed_ || bev_ == nullptr) return;
  if (disable) {
    if (read_disable_count_++ == 0) bufferevent_disable(bev_, EV_READ);
    return;
  }
  if (read_disable_count_ == 0) return;
  if (--read_disable_count_ == 0) {
    bufferevent_enable(bev_, EV_READ);
    if (evbuffer_get_length(bufferevent_get_input(bev_)) > 0) resume_timer_->enableTimer(std::chrono::milliseconds(0));
  }
}

void UpstreamConnection::abandon() {
  request_ = nullptr;
  close();  // mid-request: the connection state is unknown, never reuse it
}

void UpstreamConnection::onReadCb(bufferevent*, void* arg) { static_cast<UpstreamConnection*>(arg)->onReadable(); }
void UpstreamConnection::onEventCb(bufferevent*, short what, void* arg) {
  static_cast<UpstreamConnection*>(arg)->onEvent(what);
}

void UpstreamConnection::onReadable() {
  evbuffer* in = bufferevent_get_input(bev_);
  // Stop as soon as a read-disable arrives (the response data just delivered filled the
  // downstream): what is left stays buffered until the resume.
  while (!closed_ && read_disable_count_ == 0 && evbuffer_get_length(in) > 0) {
    if (request_ == nullptr) {
      // Bytes on an idle connection (or after a complete response): protocol violation by the
      // upstream (codec_impl.cc prematureResponseError, counted by codec_client.cc:190-203);
      // drop the connection.
      pool_.countProtocolError();
      close();
      return;
    }
    evbuffer_iovec vec;
    if (evbuffer_peek(in, -1, nullptr, &vec, 1) < 1) return;
    size_t n = parser_.dispatch(static_cast<const char*>(vec.iov_base), vec.iov_len);
    if (closed_) return;
    evbuffer_drain(in, n);
    if (parser_.error()) {
      // codec_client.cc:190-203: a codec error counts upstream_cx_protocol_error and closes the
      // connection; the stream is reset with ProtocolError (router: 502, flag UPE).
      pool_.countProtocolError();
      fail(UpstreamResetReason::ProtocolError, "");
      return;
    }
    if (n == 0) return;
  }
}

void UpstreamConnection::onEvent(short what) {
  if (closed_) return;
  if (what & BEV_EVENT_CONNECTED) {
    connected_ = true;
    connect_timer_->disableTimer();
    // Envoy's ConnectionImpl / ActiveClient: active connections and connect latency.
    pool_.stats_.upstream_cx_active.add(1);
    host_stats_.cx_active.add(1);
    pool_.stats_.upstream_cx_connect_ms.record(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - connect_start_).count()));
    if (request_ != nullptr) request_->cb_.onPoolReady(host_);
    return;
  }
  if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))) return;
  if (!connected_) {
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(bufferevent_getfd(bev_), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err == 0)
      err = EVUTIL_SOCKET_ERROR();
    if (err == 0) err = ECONNREFUSED;
    pool_.countConnectFailure(false, host_stats_);
    MOE_LOG(Debug, "upstream", "connect to %s failed: %s", host_.c_str(), strerror(err));
    // Envoy's transport failure reason for a failed connect (connection_impl.cc).
    fail(UpstreamResetReason::ConnectionFailure, "delayed connect error: " + std::to_string(err));
    return;
  }
  remote_close_ = true;
  if (request_ == nullptr) {
    close();  // an idle keep-alive connection closed by the upstream
    return;
  }
  // Bytes still buffered were already parsed by onReadable; EOF may complete a body delimited
  // by connection close.
  if (parser_.onEof()) return;
  fail(UpstreamResetReason::ConnectionTermination, "connection termination");
}

void UpstreamConnection::onConnectTimeout() {
  if (closed_ || connected_) return;
  pool_.countConnectFailure(true, host_stats_);
  fail(UpstreamResetReason::ConnectionFailure, "connect timeout");
}

void UpstreamConnection::onResponseHeaders(HeaderMapPtr headers, bool end_stream) {
  if (request_ == nullptr) return;
  if (!end_stream) {
    request_->cb_.onUpstreamHeaders(std::move(headers), false);
    return;
  }
  UpstreamCallbacks& cb = completeResponse();
  cb.onUpstreamHeaders(std::move(headers), true);
}

void UpstreamConnection::onResponseData(Buffer& data, bool end_stream) {
  if (request_ == nullptr) return;
  if (!end_stream) {
    request_->cb_.onUpstreamData(data, false);
    return;
  }
  UpstreamCallbacks& cb = completeResponse();
  cb.onUpstreamData(data, true);
}

void UpstreamConnection::onResponseTrailers(HeaderMapPtr trailers) {
  if (request_ == nullptr) return;
  UpstreamCallbacks& cb = completeResponse();
  cb.onUpstreamTrailers(std::move(trailers));
}

UpstreamCallbacks& UpstreamConnection::completeResponse() {
  UpstreamRequestImpl* r = request_;
  request_ = nullptr;
  r->conn_ = nullptr;
  r->done_ = true;
  // The response is over: a pause its stream asked for ends with it (the downstream watermark
  // callbacks go with the router's upstream request).
  if (read_disable_count_ > 0) {
    read_disable_count_ = 0;
    if (!closed_) bufferevent_enable(bev_, EV_READ);
  }
  above_write_high_ = false;
  // Reuse only after a clean exchange: the whole request was written and neither side asked
  // to close (Envoy's ActiveClient::onResponseComplete / saw_close_header).
  // Bytes after the response are caught by onReadable once the parser returns.
  // An upgrade's connection never returns: after a 101 it is not HTTP any more, and after any
  // other answer Envoy closes it too (the router resets a request it did not finish sending).
  // (An upgrade request always has a connection of its own: newRequest.)
  const bool reusable = !r->upgrade_ && r->serializer_.complete() && parser_.keepAlive();
  if (reusable) {
    pool_.onConnectionIdle(this);
  } else {
    close();
  }
  return r->cb_;
}

void UpstreamConnection::fail(UpstreamResetReason reason, const std::string& details) {
  UpstreamRequestImpl* r = request_;
  request_ = nullptr;
  close();
  if (r != nullptr) {
    r->conn_ = nullptr;
    r->done_ = true;
    r->cb_.onUpstreamReset(reason, details);  // may delete r
  }
}

void UpstreamConnection::close() {
  if (closed_) return;
  closed_ = true;
  if (connected_) {
    pool_.stats_.upstream_cx_active.sub(1);
    host_stats_.cx_active.sub(1);
    pool_.stats_.upstream_cx_destroy.inc();
    (remote_close_ ? pool_.stats_.upstream_cx_destroy_remote : pool_.stats_.upstream_cx_destroy_local).inc();
  }
  parser_.stop();
  if (bev_ != nullptr) {
    bufferevent_disable(bev_, EV_READ | EV_WRITE);
    bufferevent_setcb(bev_, nullptr, nullptr, nullptr, nullptr);
  }
  if (connect_timer_) connect_timer_->disableTimer();
  if (resume_timer_) resume_timer_->disableTimer();
  if (request_ != nullptr) {
    request_->conn_ = nullptr;
    request_ = nullptr;
  }
  pool_.onConnectionClosed(this);
  dispatcher_.deferredDelete([this] { delete this; });
}

// ---- ConnPool ----

ConnPool::ConnPool(Dispatcher& dispatcher, std::string cluster_name, uint64_t connect_timeout_ms,
                   std::shared_ptr<ClusterStats> stats)
    : dispatcher_(dispatcher), cluster_name_(std::move(cluster_name)), stats_owner_(std::move(stats)),
      stats_(*stats_owner_),
      connect_timeout_ms_(connect_timeout_ms) {}

UpstreamRequestPtr ConnPool::newRequest(const Endpoint& endpoint, UpstreamCallbacks& cb, bool upgrade) {
  auto request = std::make_unique<UpstreamRequestImpl>(dispatcher_, cb);
  request->upgrade_ = upgrade;
  auto it = upgrade ? idle_.end() : idle_.find(endpoint.str());
  if (it != idle_.end() && !it->second.empty()) {
    // Most recently used first: the least likely to have been closed by the upstream.
    UpstreamConnection* conn = it->second.back();
    it->second.pop_back();
    stats().counter("moe_host.upstream_cx_reuse").inc();
    conn->attach(request.get());
    // Ready "now", but reported from the loop: the caller has not seen the request pointer yet.
    std::string host = conn->host();
    request->postIfAlive([host](UpstreamRequestImpl& r) {
      if (r.conn_ != nullptr && !r.done_) r.cb_.onPoolReady(host);
    });
    return request;
  }
  auto* conn = new UpstreamConnection(*this, dispatcher_, endpoint, connect_timeout_ms_);
  all_.insert(conn);
  stats().counter("moe_host.upstream_cx_total").inc();
  stats_.upstream_cx_total.inc();
  stats_.host(conn->host()).cx_total.inc();
  conn->attach(request.get());
  int err = 0;
  if (!conn->connect(&err)) {
    countConnectFailure(false, stats_.host(conn->host()));
    MOE_LOG(Debug, "upstream", "connect to %s failed immediately: %s", conn->host().c_str(), strerror(err));
    // Envoy's failure reason when connect(2) itself fails (connection_impl.cc
    // ClientConnectionImpl::connect), reported from the loop like every connect failure.
    std::string details = "immediate connect error: " + std::to_string(err) + "|remote address:" + conn->host();
    request->conn_ = nullptr;
    conn->abandon();
    request->postIfAlive([details](UpstreamRequestImpl& r) {
      if (r.done_) return;
      r.done_ = true;
      r.cb_.onUpstreamReset(UpstreamResetReason::ConnectionFailure, details);
    });
  }
  return request;
}

UpstreamRequestPtr ConnPool::failedRequest(UpstreamCallbacks& cb, UpstreamResetReason reason, std::string details) {
  auto request = std::make_unique<UpstreamRequestImpl>(dispatcher_, cb);
  request->postIfAlive([reason, details](UpstreamRequestImpl& r) {
    if (r.done_) return;
    r.done_ = true;
    r.cb_.onUpstreamReset(reason, details);
  });
  return request;
}

void ConnPool::countConnectFailure(bool timeout, HostStats& host) {
  // Host-wide counters plus Envoy's per-cluster names (cluster.<name>.upstream_cx_connect_*)
  // and the host's cx_connect_fail.
  stats().counter("moe_host.upstream_cx_connect_fail").inc();
  stats_.upstream_cx_connect_fail.inc();
  host.cx_connect_fail.inc();
  if (timeout) {
    stats().counter("moe_host.upstream_cx_connect_timeout").inc();
    stats_.upstream_cx_connect_timeout.inc();
  }
}

void ConnPool::countProtocolError() {
  stats().counter("cluster." + cluster_name_ + ".upstream_cx_protocol_error").inc();
}

void ConnPool::onConnectionIdle(UpstreamConnection* conn) { idle_[conn->host()].push_back(conn); }

void ConnPool::onConnectionClosed(UpstreamConnection* conn) {
  all_.erase(conn);
  auto it = idle_.find(conn->host());
  if (it != idle_.end()) it->second.remove(conn);
}

} // namespace moe
