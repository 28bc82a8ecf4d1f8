// golang_filter: port of Envoy's contrib/golang/filters/http/source/golang_filter.{h,cc} ("GF").
// FilterConfig = one `envoy.filters.http.golang` entry of a listener (parsed once at startup);
// Filter = one per stream, registered both as a stream filter and as an access-log handler;
// HttpRequestInternal = the C memory Go holds (httpRequest + both processor states), which
// outlives the Filter until Go's GC calls envoyGoFilterHttpFinalize.
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "dso.h"
#include "filter_manager.h"
#include "processor_state.h"
#include "stats.h"

namespace moe::golang {

class Filter;
class FilterConfig;

// Heap httpConfig Go keeps for metrics; freed by envoyGoConfigHttpFinalize (CGO:323-328).
struct HttpConfigInternal {
  httpConfig config; // must be first: Go gets &config
  std::weak_ptr<FilterConfig> filter_config;
};
static_assert(offsetof(HttpConfigInternal, config) == 0, "httpConfig at offset 0");

// GF:1834-1929, GFH:35-56: metric ids encode their type in the low 2 bits.
class MetricStore {
public:
  CAPIStatus define(uint32_t type, const std::string& name, uint32_t* id);
  CAPIStatus increment(uint32_t id, int64_t offset);
  CAPIStatus get(uint32_t id, uint64_t* value);
  CAPIStatus record(uint32_t id, uint64_t value);

private:
  std::mutex mu_;
  uint32_t next_counter_ = 0, next_gauge_ = 0, next_histogram_ = 0;
  std::map<uint32_t, Counter*> counters_;
  std::map<uint32_t, Gauge*> gauges_;
  std::map<uint32_t, Histogram*> histograms_;
};

class FilterConfig : public std::enable_shared_from_this<FilterConfig> {
public:
  // stats_prefix: "http.<hcm stat_prefix>." (Envoy's filter stat prefix); the panic counter is
  // "<stats_prefix>golang.panic_error" (config.cc:33, stats.h).
  FilterConfig(const bootstrap::HttpFilter& filter, const std::string& stats_prefix,
               uint32_t concurrency);
  ~FilterConfig();
  // Calls NewHttpPluginConfig (GF:1802-1826); throws std::runtime_error when Go returns 0.
  void newGoPluginConfig();

  const std::string& filterName() const { return filter_name_; }
  const std::string& pluginName() const { return plugin_name_; }
  uint64_t configId() const { return config_id_; }
  GoLibrary& lib() const { return *lib_; }
  uint32_t concurrency() const { return concurrency_; }
  Counter& panicError() { return *panic_error_; }
  MetricStore& metrics() { return metrics_; }
  const std::string* secret(const std::string& name) const {
    auto it = secrets_.find(name);
    return it == secrets_.end() ? nullptr : &it->second;
  }

private:
  std::string filter_name_, plugin_name_, library_id_, library_path_, plugin_config_any_;
  std::map<std::string, std::string> secrets_;
  uint32_t concurrency_;
  GoLibrary* lib_ = nullptr;
  uint64_t config_id_ = 0;
  // Owned by Go once passed to NewHttpPluginConfig (freed by envoyGoConfigHttpFinalize); only
  // remembered, never dereferenced, so LeakSanitizer sees Go-held memory as referenced (Go's
  // heap is not scanned by it).
  const void* go_held_config_ = nullptr;
  Counter* panic_error_;
  MetricStore metrics_;
};
using FilterConfigSharedPtr = std::shared_ptr<FilterConfig>;

// Per-route plugin config ids (GF:1933-2051): parsed with is_route_config=1, merged lazily with
// the parent id on first use and cached per (route plugin config, parent id).
class RoutePluginConfigs {
public:
  // Parses every per-route golang config in the route configuration now (Envoy's
  // RoutePluginConfig constructor, when the route table loads, for plugins whose library is
  // loaded); throws when Go rejects one (config id 0), after releasing what it parsed.
  static void preload(const bootstrap::RouteConfiguration& rc);
  // The route table version is gone (its last stream ended): its per-route config ids and
  // merged ids are destroyed in Go (~RoutePluginConfig, GF:1961-1969).
  static void release(const bootstrap::RouteConfiguration& rc);
  static uint64_t mergedConfigId(const bootstrap::RoutePluginConfig& cfg,
                                 const std::string& plugin_name, uint64_t parent_id);
};

struct HttpRequestInternal;
// Sanitizer builds only: Go may keep a request until its GC runs the finalizer (a goroutine that
// outlives its stream, say), and LeakSanitizer cannot see pointers held in Go's heap. A registry
// of requests Go has not finalized yet keeps those from being reported as leaks at exit, while
// everything else stays checked. Normal builds compile this out.
void trackGoHeldRequest(HttpRequestInternal* req, bool held);

// Go's view of one stream (GFH:211-233): httpRequest first.
struct HttpRequestInternal {
  httpRequest req; // offset 0
  ProcessorState decoding_state;
  ProcessorState encoding_state;
  std::weak_ptr<Filter> filter;
  // Scratch for strings returned to Go (Go copies them before the next call).
  std::string strValue;
  std::string plugin_name; // backing store for req.plugin_name

  explicit HttpRequestInternal(const std::string& plugin)
      : decoding_state(&req, false), encoding_state(&req, true), plugin_name(plugin) {
    req.plugin_name = Cstring{plugin_name.data(), plugin_name.size()};
    req.configId = 0;
    req.worker_id = 0;
    req.is_golang_processing_log.store(0);
    trackGoHeldRequest(this, true);
  }
  ~HttpRequestInternal() { trackGoHeldRequest(this, false); }
  HttpRequestInternal(const HttpRequestInternal&) = delete;
  HttpRequestInternal& operator=(const HttpRequestInternal&) = delete;
};

class Filter : public StreamFilter,
               public AccessLogHandler,
               public std::enable_shared_from_this<Filter> {
public:
  Filter(FilterConfigSharedPtr config, uint32_t worker_id);
  ~Filter() override;

  // StreamDecoderFilter / StreamEncoderFilter (GF:46-134)
  FilterHeadersStatus decodeHeaders(HeaderMap& headers, bool end_stream) override;
  FilterDataStatus decodeData(Buffer& data, bool end_stream) override;
  FilterTrailersStatus decodeTrailers(HeaderMap& trailers) override;
  FilterHeadersStatus encodeHeaders(HeaderMap& headers, bool end_stream) override;
  FilterDataStatus encodeData(Buffer& data, bool end_stream) override;
  FilterTrailersStatus encodeTrailers(HeaderMap& trailers) override;
  void setDecoderFilterCallbacks(StreamDecoderFilterCallbacks& cb) override;
  void setEncoderFilterCallbacks(StreamEncoderFilterCallbacks& cb) override;
  void onStreamComplete() override;
  void onDestroy() override;
  // AccessLogHandler (GF:179-240)
  void log(::moe::AccessLogType type, const HeaderMap* request_headers, const HeaderMap* response_headers,
           const HeaderMap* response_trailers) override;

  // ---- CAPI implementations (called through capi.cc) ----
  CAPIStatus continueStatus(ProcessorState& state, GolangStatus status);
  CAPIStatus sendLocalReply(ProcessorState& state, int code, std::string body,
                            std::vector<std::pair<std::string, std::string>> headers,
                            int64_t grpc_status, std::string details);
  CAPIStatus sendPanicReply(ProcessorState& state, std::string_view details);
  CAPIStatus addData(ProcessorState& state, std::string_view data, bool is_streaming);
  CAPIStatus injectData(ProcessorState& state, std::string_view data);
  CAPIStatus getHeader(ProcessorState& state, std::string_view key, uint64_t* value_data,
                       int* value_len);
  CAPIStatus copyHeaders(ProcessorState& state, GoString* strs, char* buf);
  CAPIStatus setHeader(ProcessorState& state, std::string_view key, std::string_view value,
                       headerAction act);
  CAPIStatus removeHeader(ProcessorState& state, std::string_view key);
  CAPIStatus copyBuffer(ProcessorState& state, Buffer* buffer, char* data);
  CAPIStatus drainBuffer(ProcessorState& state, Buffer* buffer, uint64_t length);
  CAPIStatus setBufferHelper(ProcessorState& state, Buffer* buffer, std::string_view value,
                             bufferAction action);
  CAPIStatus copyTrailers(ProcessorState& state, GoString* strs, char* buf);
  CAPIStatus setTrailer(ProcessorState& state, std::string_view key, std::string_view value,
                        headerAction act);
  CAPIStatus removeTrailer(ProcessorState& state, std::string_view key);
  CAPIStatus setUpstreamOverrideHost(ProcessorState& state, std::string_view host, bool strict);
  CAPIStatus clearRouteCache(bool refresh);
  CAPIStatus getIntegerValue(int id, uint64_t* value);
  CAPIStatus getStringValue(int id, uint64_t* value_data, int* value_len);
  CAPIStatus getDynamicMetadata(const std::string& name, uint64_t* data, int* len);
  CAPIStatus setDynamicMetadata(std::string name, std::string key, std::string_view value);
  CAPIStatus setStringFilterState(std::string_view key, std::string_view value);
  CAPIStatus getStringFilterState(std::string_view key, uint64_t* data, int* len);
  CAPIStatus getStringProperty(std::string_view path, uint64_t* data, int* len, int* rc);
  CAPIStatus getSecret(std::string_view name, uint64_t* data, int* len);
  CAPIStatus setDrainConnectionUponCompletion();
  void deferredDeleteRequest(HttpRequestInternal* req);

  // GF: isProcessingInGo over both directions (log flag included).
  bool isProcessingInGo() const {
    return req_->decoding_state.isProcessingInGo() || req_->encoding_state.isProcessingInGo();
  }
  bool hasDestroyed() const { return has_destroyed_.load(std::memory_order_acquire); }
  FilterConfig& config() { return *config_; }

private:
  // The header and trailer CAPIs differ only in which map of the state they touch.
  CAPIStatus copyMapToGo(ProcessorState& state, HeaderMap* ProcessorState::*which, GoString* strs,
                         char* buf);
  CAPIStatus setInMap(ProcessorState& state, HeaderMap* ProcessorState::*which,
                      std::string_view key, std::string_view value, headerAction act);
  CAPIStatus removeFromMap(ProcessorState& state, HeaderMap* ProcessorState::*which,
                           std::string_view key);

  // GF:242-387
  GolangStatus doHeadersGo(ProcessorState& state, HeaderMap& headers, bool end_stream);
  bool doHeaders(ProcessorState& state, HeaderMap& headers, bool end_stream);
  bool doDataGo(ProcessorState& state, Buffer& data, bool end_stream);
  bool doData(ProcessorState& state, Buffer& data, bool end_stream);
  bool doTrailerGo(ProcessorState& state, HeaderMap& trailers);
  bool doTrailer(ProcessorState& state, HeaderMap& trailers);
  void continueStatusInternal(ProcessorState& state, GolangStatus status);
  void sendLocalReplyInternal(ProcessorState& state, int code, const std::string& body,
                              ModifyHeadersCb modify, int64_t grpc_status,
                              const std::string& details);
  void clearRouteCacheInternal(bool refresh);
  CAPIStatus getStringPropertyCommon(std::string_view path, uint64_t* data, int* len);
  void populateMetadata(const std::string& name, uint64_t* data, int* len);
  bool initRequest();
  uint64_t getMergedConfigId();
  bool isThreadSafe() const { return dispatcher_->isThreadSafe(); }
  StreamInfo& streamInfo() { return decoder_callbacks_->streamInfo(); }
  // Posts fn to the worker; it runs only if this filter still exists and was not destroyed.
  template <class Fn> void postIfAlive(Fn fn);

  FilterConfigSharedPtr config_;
  GoLibrary& lib_;
  HttpRequestInternal* req_;
  StreamDecoderFilterCallbacks* decoder_callbacks_ = nullptr;
  StreamEncoderFilterCallbacks* encoder_callbacks_ = nullptr;
  Dispatcher* dispatcher_ = nullptr;

  // Serialises off-thread readers of stream-owned objects against onDestroy (GFH:352-449).
  mutable std::mutex mutex_;
  std::atomic<bool> has_destroyed_{false};

  HeaderMap* request_headers_ = nullptr;
  HeaderMap* request_trailers_ = nullptr;
  const HeaderMap* response_headers_ = nullptr;
  const HeaderMap* response_trailers_ = nullptr;
};

} // namespace moe::golang
