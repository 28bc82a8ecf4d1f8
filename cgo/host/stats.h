// Named atomic counters, gauges and histograms (Envoy's Stats::Store, much reduced), shown on
// the admin /stats and /stats/prometheus pages. Lookup by name takes a mutex and returns a
// reference that stays valid for the process lifetime; updates are lock-free atomics, so hot
// paths look a stat up once and keep the reference.
//
// Names are Envoy's full stat names ("cluster.backend.upstream_rq_200"); tags are extracted from
// them with Envoy's default tag extractors (TagProducer, below) for /stats/prometheus, as
// Envoy's TagProducerImpl does when a stat is created.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moe {

struct Counter {
  std::atomic<uint64_t> value{0};
  void inc(uint64_t n = 1) { value.fetch_add(n, std::memory_order_relaxed); }
  uint64_t get() const { return value.load(std::memory_order_relaxed); }
  void reset() { value.store(0, std::memory_order_relaxed); }
};

struct Gauge {
  std::atomic<int64_t> value{0};
  std::atomic<bool> used{false};  // set, added to or subtracted from at least once
  void add(int64_t n) { used.store(true, std::memory_order_relaxed); value.fetch_add(n, std::memory_order_relaxed); }
  void sub(int64_t n) { used.store(true, std::memory_order_relaxed); value.fetch_sub(n, std::memory_order_relaxed); }
  void set(int64_t n) { used.store(true, std::memory_order_relaxed); value.store(n, std::memory_order_relaxed); }
  int64_t get() const { return value.load(std::memory_order_relaxed); }
};

// Counts per fixed bucket (Envoy's default supported buckets, source/common/stats/
// histogram_impl.cc), plus count and sum, since the start (cumulative) and since the last merge
// (interval; Envoy merges at every stats flush, by default every 5 s).
struct Histogram {
  static const std::vector<double>& bounds();
  // Envoy's supported quantiles (HistogramStatisticsImpl::supportedQuantiles).
  static const std::vector<double>& quantiles();

  struct Snapshot {
    std::vector<uint64_t> buckets; // bounds().size() + 1 (the last is above every bound)
    uint64_t count = 0;
    double sum = 0;
    // The q-quantile, interpolated inside its bucket; NaN without samples.
    double quantile(double q) const;
    // Samples at or below each bound.
    std::vector<uint64_t> cumulativeBuckets() const;
  };

  Histogram();
  void record(uint64_t v);
  Snapshot cumulative() const;
  // What the last merge() saw since the merge before it.
  Snapshot interval() const;
  void merge();
  bool used() const { return count.load(std::memory_order_relaxed) > 0; }

private:
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> sum{0};
  mutable std::mutex merge_mu_;
  Snapshot at_last_merge_;  // cumulative values at the last merge
  Snapshot interval_;       // the last merge's interval
};

struct Tag {
  std::string name, value;
};

// Envoy's TagProducerImpl with the default tag extractors (source/common/config/
// well_known_names.cc; regex and token extractors as source/common/stats/tag_extractor_impl.cc),
// plus --stats-tag fixed tags.
class TagProducer {
public:
  TagProducer();
  void addFixedTag(const std::string& name, const std::string& value);
  // The tag-extracted name and the tags of a full stat name.
  std::string produceTags(std::string_view name, std::vector<Tag>& tags) const;

private:
  struct Extractor {
    std::string name;
    // regex extractors
    std::optional<std::regex> regex;
    std::string substr, negative_match;
    // token extractors ("cluster.$.**")
    std::vector<std::string> tokens;
    size_t match_index = 0;
    // fixed extractors
    std::optional<std::string> fixed_value;
    std::string prefix;  // first token the stat name must have ("" = any)
    bool other_with_same_name = false;
  };
  void addRegex(const std::string& name, const std::string& regex, const std::string& substr = "",
                const std::string& negative = "");
  void addTokenized(const std::string& name, const std::string& tokens);
  void addExtractor(Extractor e);
  bool extract(const Extractor& e, std::string_view name, const std::vector<std::string_view>& tokens,
               std::vector<Tag>& tags, std::vector<std::pair<size_t, size_t>>& remove) const;
  bool searchTags(const Extractor& e, const std::vector<std::string_view>& input, size_t input_index,
                  size_t pattern_index, size_t char_index, size_t& start, size_t& match_index) const;

  std::vector<Extractor> without_prefix_;
  std::map<std::string, std::vector<Extractor>, std::less<>> by_prefix_;
};

class Store {
public:
  Counter& counter(const std::string& name);
  Gauge& gauge(const std::string& name);
  Histogram& histogram(const std::string& name);
  void addFixedTag(const std::string& name, const std::string& value);

  // Admin /stats query options (source/server/admin/stats_params.cc).
  struct Params {
    std::optional<std::regex> filter;  // kept when the full name matches (search)
    bool used_only = false;
    enum class Type { All, Counters, Gauges, Histograms } type = Type::All;
    // histogram_buckets: text shows quantiles unless cumulative; Prometheus shows classic
    // histograms unless summary.
    enum class Buckets { Unset, Summary, Cumulative } buckets = Buckets::Unset;
  };
  // "name: value" lines, counters and gauges merged and sorted by name, then histograms
  // (Envoy's /stats text format, StatsTextRender).
  std::string renderText(const Params& p) const;
  // /stats?format=json (StatsJsonRender).
  std::string renderJson(const Params& p) const;
  // Prometheus text exposition with tags as labels (prometheus_stats.cc).
  std::string renderPrometheus(const Params& p) const;
  // Merges histogram intervals (Envoy: at every stats flush).
  void mergeHistograms();
  // POST /reset_counters.
  void resetCounters();

private:
  struct Tagged {
    std::string extracted;
    std::vector<Tag> tags;
  };
  const Tagged& tagged(const std::string& name) const;  // mu_ held
  bool show(const Params& p, const std::string& name, bool used) const;

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Counter>> counters_;
  std::map<std::string, std::unique_ptr<Gauge>> gauges_;
  std::map<std::string, std::unique_ptr<Histogram>> histograms_;
  TagProducer tag_producer_;
  mutable std::map<std::string, Tagged> tagged_;
};

// The process-wide store. Global because the C ABI functions (capi.cc) are free functions that
// Go calls with no context argument besides the request/config pointer.
Store& stats();

// A double as Envoy prints it ({fmt} "{}": the shortest representation that reads back the
// same; "nan" for NaN).
std::string formatDouble(double v);

} // namespace moe
