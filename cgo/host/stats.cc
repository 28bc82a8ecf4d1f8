// The stats store behind /stats and /stats/prometheus (Envoy: source/common/stats and
// source/server/admin/stats_handler.cc, much reduced).
#include "stats.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace moe {

const std::vector<double>& Histogram::bounds() {
  // Envoy's default supported buckets (source/common/stats/histogram_impl.cc,
  // HistogramSettingsImpl::defaultBuckets).
  static const std::vector<double> kBounds = {0.5,   1,     5,      10,      25,      50,     100,
                                              250,   500,   1000,   2500,    5000,    10000,  30000,
                                              60000, 300000, 600000, 1800000, 3600000};
  return kBounds;
}

Histogram::Histogram() : buckets(new std::atomic<uint64_t>[bounds().size() + 1]) {
  for (size_t i = 0; i <= bounds().size(); i++) buckets[i].store(0);
}

void Histogram::record(uint64_t v) {
  const auto& b = bounds();
  size_t i = 0;
  while (i < b.size() && static_cast<double>(v) > b[i]) i++;
  buckets[i].fetch_add(1, std::memory_order_relaxed);
  count.fetch_add(1, std::memory_order_relaxed);
  sum.fetch_add(v, std::memory_order_relaxed);
}

Counter& Store::counter(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = counters_[name];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& Store::gauge(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = gauges_[name];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

Histogram& Store::histogram(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = histograms_[name];
  if (!slot) slot = std::make_unique<Histogram>();
  return *slot;
}

namespace {

std::string formatDouble(double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// Quantile estimated from bucket counts: the upper bound of the bucket holding the q-th sample,
// interpolated linearly inside that bucket. Envoy uses exact circllhist quantiles; an estimate is
// enough for a test tool.
double quantile(const Histogram& h, double q) {
  const auto& b = Histogram::bounds();
  uint64_t total = h.count.load();
  if (total == 0) return std::nan("");
  double rank = q * static_cast<double>(total);
  uint64_t seen = 0;
  for (size_t i = 0; i <= b.size(); i++) {
    uint64_t c = h.buckets[i].load();
    if (c > 0 && static_cast<double>(seen + c) >= rank) {
      double lo = i == 0 ? 0 : b[i - 1];
      double hi = i < b.size() ? b[i] : b.back();
      double frac = (rank - static_cast<double>(seen)) / static_cast<double>(c);
      return lo + (hi - lo) * frac;
    }
    seen += c;
  }
  return b.back();
}

std::string promName(const std::string& name) {
  std::string out = "envoy_";
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out.push_back(ok ? c : '_');
  }
  return out;
}

} // namespace

std::string Store::renderText() const {
  std::lock_guard<std::mutex> lock(mu_);
  // Envoy prints counters and gauges merged and sorted by name, then histograms.
  std::map<std::string, std::string> lines;
  for (auto& [name, c] : counters_) lines[name] = std::to_string(c->get());
  for (auto& [name, g] : gauges_) lines[name] = std::to_string(g->get());
  std::string out;
  for (auto& [name, v] : lines) out += name + ": " + v + "\n";
  for (auto& [name, h] : histograms_) {
    uint64_t count = h->count.load();
    if (count == 0) {
      out += name + ": No recorded values\n";
      continue;
    }
    out += name + ": P50(" + formatDouble(quantile(*h, 0.5)) + ") P90(" +
           formatDouble(quantile(*h, 0.9)) + ") P99(" + formatDouble(quantile(*h, 0.99)) +
           ") count=" + std::to_string(count) + " sum=" + std::to_string(h->sum.load()) + "\n";
  }
  return out;
}

std::string Store::renderPrometheus() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (auto& [name, c] : counters_) {
    std::string p = promName(name);
    out += "# TYPE " + p + " counter\n" + p + "{} " + std::to_string(c->get()) + "\n";
  }
  for (auto& [name, g] : gauges_) {
    std::string p = promName(name);
    out += "# TYPE " + p + " gauge\n" + p + "{} " + std::to_string(g->get()) + "\n";
  }
  const auto& b = Histogram::bounds();
  for (auto& [name, h] : histograms_) {
    std::string p = promName(name);
    out += "# TYPE " + p + " histogram\n";
    uint64_t cumulative = 0;
    for (size_t i = 0; i < b.size(); i++) {
      cumulative += h->buckets[i].load();
      out += p + "_bucket{le=\"" + formatDouble(b[i]) + "\"} " + std::to_string(cumulative) + "\n";
    }
    cumulative += h->buckets[b.size()].load();
    out += p + "_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
    out += p + "_sum{} " + std::to_string(h->sum.load()) + "\n";
    out += p + "_count{} " + std::to_string(h->count.load()) + "\n";
  }
  return out;
}

Store& stats() {
  // Leaked on purpose: Go threads may record stats while the process exits.
  static Store* store = new Store();
  return *store;
}

} // namespace moe
