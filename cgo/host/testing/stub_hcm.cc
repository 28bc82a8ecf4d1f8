// A stand-in for the connection manager, linked only into moe-host-netonly, to test the network
// side alone: every request is proxied to the first cluster of the bootstrap, streaming both
// ways (trailers included), with a 503 local reply when the upstream fails before headers.
// The header x-moe-override-host (and x-moe-override-strict: 1) exercises override hosts.
#include <atomic>
#include <memory>
#include <unordered_set>

#include "cluster.h"
#include "logger.h"
#include "route_config_provider.h"
#include "server.h"

namespace moe {
namespace {

// Streams alive in all stub connection managers; main.cc polls it during graceful stop.
std::atomic<int64_t> g_active_streams{0};

class StubConnManager;

class StubStream : public RequestDecoder, public UpstreamCallbacks {
public:
  StubStream(StubConnManager& parent, ResponseEncoder& encoder) : parent_(parent), encoder_(encoder) {
    g_active_streams.fetch_add(1);
  }
  ~StubStream() override { g_active_streams.fetch_sub(1); }

  // RequestDecoder
  void decodeHeaders(HeaderMapPtr headers, bool end_stream) override;
  void decodeData(Buffer& data, bool end_stream) override {
    if (upstream_) upstream_->encodeData(data, end_stream);
    if (!end_stream) pauseReading();
  }
  void decodeTrailers(HeaderMapPtr trailers) override {
    if (upstream_) upstream_->encodeTrailers(*trailers);
  }
  void onResetStream(StreamResetReason) override {
    reset_ = true;
    finish();
  }

  // UpstreamCallbacks
  void onPoolReady(const std::string& host) override {
    MOE_LOG(Debug, "stub", "upstream host %s", host.c_str());
  }
  void onUpstreamHeaders(HeaderMapPtr headers, bool end_stream) override {
    response_started_ = true;
    if (end_stream) upstream_done_ = true;
    encoder_.encodeHeaders(*headers, end_stream);
    if (end_stream) finish();
  }
  void onUpstreamData(Buffer& data, bool end_stream) override {
    if (end_stream) upstream_done_ = true;
    encoder_.encodeData(data, end_stream);
    if (end_stream) finish();
  }
  void onUpstreamTrailers(HeaderMapPtr trailers) override {
    upstream_done_ = true;
    encoder_.encodeTrailers(*trailers);
    finish();
  }
  void onUpstreamReset(UpstreamResetReason reason, const std::string& details) override {
    upstream_done_ = true;
    if (response_started_) {
      encoder_.resetStream();
    } else {
      // The router's message (router.cc upstream reset before response started).
      localReply(503, std::string("upstream connect error or disconnect/reset before headers. reset reason: ") +
                          toString(reason) + ", transport failure reason: " + details);
    }
    finish();
  }

private:
  // Exercises the codec's flow control: every body chunk stops reading from the downstream
  // (twice, nested) until the next loop iteration, as a filter over its buffer limit would.
  void pauseReading();

  void localReply(int status, const std::string& body) {
    response_started_ = true;
    HeaderMap h;
    h.addCopy(":status", std::to_string(status));
    h.addCopy("content-length", std::to_string(body.size()));
    h.addCopy("content-type", "text/plain");
    encoder_.encodeHeaders(h, false);
    Buffer b(body);
    encoder_.encodeData(b, true);
  }
  void finish();

  StubConnManager& parent_;
  ResponseEncoder& encoder_;
  UpstreamRequestPtr upstream_;
  bool response_started_ = false;
  bool upstream_done_ = false;
  bool finished_ = false;
  bool reset_ = false;  // the encoder is gone (onResetStream)
};

class StubConnManager : public ServerConnectionCallbacks {
public:
  StubConnManager(Dispatcher& dispatcher, Server& server) : dispatcher_(dispatcher), server_(server) {}
  ~StubConnManager() override {
    for (auto* s : streams_) delete s;
  }
  RequestDecoder& newStream(ResponseEncoder& encoder) override {
    auto* s = new StubStream(*this, encoder);
    streams_.insert(s);
    return *s;
  }
  bool has(StubStream* s) const { return streams_.count(s) != 0; }
  void release(StubStream* s) {
    if (streams_.erase(s) == 0) return;
    dispatcher_.deferredDelete([s] { delete s; });
  }
  Dispatcher& dispatcher_;
  Server& server_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // expires with the manager

private:
  std::unordered_set<StubStream*> streams_;
};

void StubStream::decodeHeaders(HeaderMapPtr headers, bool end_stream) {
  auto* cm = dynamic_cast<ClusterManagerImpl*>(&parent_.server_.clusterManager());
  std::shared_ptr<ClusterImpl> first = cm != nullptr && !cm->clusters().empty() ? cm->clusters().front() : nullptr;
  Cluster* cluster = first.get();
  std::optional<std::string> override_host;
  if (auto* o = headers->get("x-moe-override-host")) override_host = *o;
  const bool strict = headers->get("x-moe-override-strict") != nullptr;
  if (cluster != nullptr) upstream_ = cluster->newRequest(parent_.dispatcher_, *this, override_host, strict, false);
  if (!upstream_) {
    localReply(503, "no healthy upstream");
    finish();
    return;
  }
  upstream_->encodeHeaders(*headers, end_stream);
}

void StubStream::pauseReading() {
  if (finished_) return;
  encoder_.readDisable(true);
  encoder_.readDisable(true);
  // The stream may be finished (and deleted, deferred) before the post runs: look it up.
  StubConnManager* parent = &parent_;
  StubStream* self = this;
  std::weak_ptr<bool> alive = parent_.alive_;
  parent_.dispatcher_.post([parent, self, alive] {
    if (alive.expired() || !parent->has(self) || self->reset_) return;
    self->encoder_.readDisable(false);
    self->encoder_.readDisable(false);
  });
}

void StubStream::finish() {
  if (finished_) return;
  finished_ = true;
  if (upstream_ && !upstream_done_) upstream_->reset();
  parent_.release(this);
}

class StubFactory : public HttpConnectionManagerFactory {
public:
  StubFactory(const bootstrap::Listener& config, Server& server)
      : server_(server), max_headers_bytes_(config.hcm.max_request_headers_kb * 1024) {}
  std::unique_ptr<ServerConnectionCallbacks> createConnectionManager(Dispatcher& worker, const ConnectionInfo&) override {
    return std::make_unique<StubConnManager>(worker, server_);
  }
  uint32_t maxRequestHeadersBytes() const override { return max_headers_bytes_; }
  void setListenerAddress(const std::string&, uint16_t) override {}

private:
  Server& server_;
  uint32_t max_headers_bytes_;
};

} // namespace

std::unique_ptr<HttpConnectionManagerFactory> createHttpConnectionManagerFactory(const bootstrap::Listener& config,
                                                                                 Server& server) {
  return std::make_unique<StubFactory>(config, server);
}

int64_t activeDownstreamStreams() { return g_active_streams.load(); }

// No route tables without connection managers (config_dump.cc asks).
std::vector<DynamicRouteConfig> dynamicRouteConfigs() { return {}; }

} // namespace moe
