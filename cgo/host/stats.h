// Named atomic counters, gauges and histograms (Envoy's Stats::Store, much reduced), shown on
// the admin /stats and /stats/prometheus pages. Lookup by name takes a mutex and returns a
// reference that stays valid for the process lifetime; updates are lock-free atomics, so hot
// paths look a stat up once and keep the reference.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace moe {

struct Counter {
  std::atomic<uint64_t> value{0};
  void inc(uint64_t n = 1) { value.fetch_add(n, std::memory_order_relaxed); }
  uint64_t get() const { return value.load(std::memory_order_relaxed); }
};

struct Gauge {
  std::atomic<int64_t> value{0};
  void add(int64_t n) { value.fetch_add(n, std::memory_order_relaxed); }
  void sub(int64_t n) { value.fetch_sub(n, std::memory_order_relaxed); }
  void set(int64_t n) { value.store(n, std::memory_order_relaxed); }
  int64_t get() const { return value.load(std::memory_order_relaxed); }
};

// Fixed buckets (Envoy's default supported buckets) plus count and sum.
struct Histogram {
  static const std::vector<double>& bounds();
  std::unique_ptr<std::atomic<uint64_t>[]> buckets; // bounds().size() + 1 (overflow)
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> sum{0};
  Histogram();
  void record(uint64_t v);
};

class Store {
public:
  Counter& counter(const std::string& name);
  Gauge& gauge(const std::string& name);
  Histogram& histogram(const std::string& name);
  // "name: value" lines sorted by name (Envoy's /stats text format).
  std::string renderText() const;
  // Prometheus text exposition; names get an "envoy_" prefix, '.' becomes '_'.
  std::string renderPrometheus() const;

private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Counter>> counters_;
  std::map<std::string, std::unique_ptr<Gauge>> gauges_;
  std::map<std::string, std::unique_ptr<Histogram>> histograms_;
};

// The process-wide store. Global because the C ABI functions (capi.cc) are free functions that
// Go calls with no context argument besides the request/config pointer.
Store& stats();

} // namespace moe
