// The stats store behind /stats and /stats/prometheus (Envoy: source/common/stats,
// source/server/admin/stats_handler.cc, stats_render.cc, prometheus_stats.cc).
#include "stats.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace moe {

std::string formatDouble(double v) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// ---------------------------------------------------------------------------------------------
// Histograms
// ---------------------------------------------------------------------------------------------

const std::vector<double>& Histogram::bounds() {
  // Envoy's default supported buckets (source/common/stats/histogram_impl.cc,
  // HistogramSettingsImpl::defaultBuckets).
  static const std::vector<double> kBounds = {0.5,   1,     5,      10,      25,      50,     100,
                                              250,   500,   1000,   2500,    5000,    10000,  30000,
                                              60000, 300000, 600000, 1800000, 3600000};
  return kBounds;
}

const std::vector<double>& Histogram::quantiles() {
  static const std::vector<double> kQuantiles = {0, 0.25, 0.5, 0.75, 0.90, 0.95, 0.99, 0.995, 0.999, 1};
  return kQuantiles;
}

Histogram::Histogram() : buckets_(new std::atomic<uint64_t>[bounds().size() + 1]) {
  for (size_t i = 0; i <= bounds().size(); i++) buckets_[i].store(0);
  at_last_merge_.buckets.assign(bounds().size() + 1, 0);
  interval_.buckets.assign(bounds().size() + 1, 0);
}

void Histogram::record(uint64_t v) {
  const auto& b = bounds();
  size_t i = 0;
  while (i < b.size() && static_cast<double>(v) > b[i]) i++;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count.fetch_add(1, std::memory_order_relaxed);
  sum.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::cumulative() const {
  Snapshot s;
  s.buckets.resize(bounds().size() + 1);
  for (size_t i = 0; i <= bounds().size(); i++) s.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
  // The count is the sum of the buckets read (a record racing this read is in both or neither
  // almost always; the count must never be below the buckets' total).
  s.count = 0;
  for (uint64_t c : s.buckets) s.count += c;
  s.sum = static_cast<double>(sum.load(std::memory_order_relaxed));
  return s;
}

Histogram::Snapshot Histogram::interval() const {
  std::lock_guard<std::mutex> lock(merge_mu_);
  return interval_;
}

void Histogram::merge() {
  Snapshot now = cumulative();
  std::lock_guard<std::mutex> lock(merge_mu_);
  Snapshot iv;
  iv.buckets.resize(now.buckets.size());
  for (size_t i = 0; i < now.buckets.size(); i++) iv.buckets[i] = now.buckets[i] - at_last_merge_.buckets[i];
  iv.count = now.count - at_last_merge_.count;
  iv.sum = now.sum - at_last_merge_.sum;
  interval_ = std::move(iv);
  at_last_merge_ = std::move(now);
}

// Quantile estimated from bucket counts, interpolated linearly inside the bucket holding the
// q-th sample. Envoy uses circllhist's approximate quantiles; an estimate is enough here.
double Histogram::Snapshot::quantile(double q) const {
  const auto& b = bounds();
  if (count == 0) return std::nan("");
  double rank = q * static_cast<double>(count);
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets.size(); i++) {
    uint64_t c = buckets[i];
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

std::vector<uint64_t> Histogram::Snapshot::cumulativeBuckets() const {
  std::vector<uint64_t> out(bounds().size());
  uint64_t acc = 0;
  for (size_t i = 0; i < bounds().size(); i++) {
    acc += buckets[i];
    out[i] = acc;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tag extraction
// ---------------------------------------------------------------------------------------------

namespace {

// well_known_names.cc expandRegex. RE2's "[\w-\./]" is written "[\w\-\./]" for std::regex
// (ECMAScript refuses a class escape as a range end); the two match the same characters.
std::string expandRegex(std::string re) {
  static const std::vector<std::pair<std::string, std::string>> kSubs = {
      {"<ADDRESS>", R"((?:(?:\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[[a-fA-F_\d]+\])_\d+))"},
      {"<CIPHER>", R"([\w-]+)"},
      {"<TLS_VERSION>", R"(TLSv\d\.\d)"},
      {"<TAG_VALUE>", R"([^\.]+)"},
      {"<ROUTE_CONFIG_NAME>", R"([\w\-\./]+)"},
      {"<SCOPED_ROUTE_CONFIG_NAME>", R"([\w\-\.]+)"},
      {"<LISTENER_OR_CLUSTER_WITH_NAME>", R"((?:listener|cluster)\..*?)"},
      {"<PROXY_PROTOCOL_VERSION>", R"(\d)"}};
  for (auto& [from, to] : kSubs) {
    for (size_t pos = re.find(from); pos != std::string::npos; pos = re.find(from, pos + to.size()))
      re.replace(pos, from.size(), to);
  }
  return re;
}

// tag_extractor_impl.cc extractRegexPrefix: "^word\." gives "word".
std::string extractRegexPrefix(const std::string& regex) {
  if (regex.empty() || regex[0] != '^') return "";
  for (size_t i = 1; i < regex.size(); ++i) {
    char c = regex[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      if (i > 1) {
        const bool last = i == regex.size() - 1;
        std::string_view rest(regex);
        rest = rest.substr(i);
        const bool dot = rest.substr(0, 2) == "\\." || rest.substr(0, 6) == "(?=\\.)";
        if ((!last && dot) || (last && c == '$')) return regex.substr(1, i - 1);
      }
      break;
    }
  }
  return "";
}

std::vector<std::string_view> splitDots(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t dot = s.find('.', start);
    if (dot == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, dot - start));
    start = dot + 1;
  }
}

} // namespace

void TagProducer::addRegex(const std::string& name, const std::string& regex_in, const std::string& substr,
                           const std::string& negative) {
  Extractor e;
  e.name = name;
  const std::string regex = expandRegex(regex_in);
  e.regex.emplace(regex, std::regex::ECMAScript | std::regex::optimize);
  e.substr = substr;
  e.negative_match = negative;
  e.prefix = extractRegexPrefix(regex);
  addExtractor(std::move(e));
}

void TagProducer::addTokenized(const std::string& name, const std::string& tokens) {
  Extractor e;
  e.name = name;
  for (auto t : splitDots(tokens)) e.tokens.emplace_back(t);
  for (size_t i = 0; i < e.tokens.size(); i++) {
    if (e.tokens[i] == "$") e.match_index = i;
  }
  const std::string& first = e.tokens[0];
  if (first != "$" && first != "*" && first != "**") e.prefix = first;
  addExtractor(std::move(e));
}

void TagProducer::addFixedTag(const std::string& name, const std::string& value) {
  Extractor e;
  e.name = name;
  e.fixed_value = value;
  addExtractor(std::move(e));
}

// tag_producer_impl.cc addExtractor: marks extractors that share a name (only one of them may
// produce the tag), files them under their prefix token.
void TagProducer::addExtractor(Extractor e) {
  auto mark = [&](Extractor& other) {
    if (other.name == e.name) {
      other.other_with_same_name = true;
      e.other_with_same_name = true;
    }
  };
  for (auto& o : without_prefix_) mark(o);
  for (auto& [_, v] : by_prefix_) {
    for (auto& o : v) mark(o);
  }
  if (e.prefix.empty()) {
    without_prefix_.push_back(std::move(e));
  } else {
    by_prefix_[e.prefix].push_back(std::move(e));
  }
}

// TagNameValues::TagNameValues (well_known_names.cc), in its order.
TagProducer::TagProducer() {
  addRegex("envoy.response_code", R"(_rq(_(\d{3}))$)", "_rq_");
  addRegex("envoy.response_code_class", R"(_rq_((\d))xx$)", "_rq_");
  addRegex("envoy.dynamo_partition_id",
           R"(^http\.<TAG_VALUE>\.dynamodb\.table\.<TAG_VALUE>\.capacity\.<TAG_VALUE>(\.__partition_id=(\w{7}))$)",
           ".dynamodb.table.");
  addRegex("envoy.dynamo_operation",
           R"(^http\.<TAG_VALUE>\.dynamodb.(?:operation|table\.<TAG_VALUE>\.capacity)(\.(<TAG_VALUE>))(?:\.|$))",
           ".dynamodb.");
  addTokenized("envoy.mongo_callsite", "mongo.*.collection.*.callsite.$.query.**");
  addRegex("envoy.dynamo_table", R"(^http\.<TAG_VALUE>\.dynamodb.(?:table|error)\.((<TAG_VALUE>)\.))", ".dynamodb.");
  addTokenized("envoy.mongo_collection", "mongo.*.collection.$.**.query.*");
  addTokenized("envoy.mongo_cmd", "mongo.*.cmd.$.**");
  addTokenized("envoy.grpc_bridge_method", "cluster.*.grpc.*.$.**");
  addTokenized("envoy.http_user_agent", "http.*.user_agent.$.**");
  addTokenized("envoy.virtual_cluster", "vhost.*.vcluster.$.**");
  addTokenized("envoy.fault_downstream_cluster", "http.*.fault.$.**");
  addRegex("envoy.ssl_cipher", R"(^listener\..*?\.ssl\.ciphers(\.(<CIPHER>))$)", ".ssl.ciphers.");
  addRegex("envoy.ssl_curve", R"(^<LISTENER_OR_CLUSTER_WITH_NAME>\.ssl\.curves(\.(<CIPHER>))$)", ".ssl.curves.");
  addRegex("envoy.ssl_sigalg", R"(^<LISTENER_OR_CLUSTER_WITH_NAME>\.ssl\.sigalgs(\.(<CIPHER>))$)", ".ssl.sigalgs.");
  addRegex("envoy.ssl_version", R"(^<LISTENER_OR_CLUSTER_WITH_NAME>\.ssl\.versions(\.(<TLS_VERSION>))$)", ".ssl.versions.");
  addRegex("cipher_suite", R"(^cluster\.<TAG_VALUE>\.ssl\.ciphers(\.(<CIPHER>))$)", ".ssl.ciphers.");
  addTokenized("envoy.grpc_bridge_service", "cluster.*.grpc.$.**");
  addTokenized("envoy.tcp_prefix", "tcp.$.**");
  addTokenized("envoy.udp_prefix", "udp.$.**");
  addTokenized("envoy.clientssl_prefix", "auth.clientssl.$.**");
  addTokenized("envoy.ratelimit_prefix", "ratelimit.$.**");
  addTokenized("envoy.cluster_name", "cluster.$.**");
  addRegex("envoy.http_conn_manager_prefix", R"(^listener\..*?\.http\.((<TAG_VALUE>)\.))", ".http.");
  addTokenized("envoy.ext_authz_prefix", "cluster.*.ext_authz.$.**");
  addTokenized("envoy.ext_authz_prefix", "http.*.ext_authz.$.**");
  addTokenized("envoy.http_conn_manager_prefix", "http.$.**");
  addRegex("envoy.worker_id",
           R"(^(?:listener\.(?:<ADDRESS>|<TAG_VALUE>)|server|listener_manager|thread_local_cluster_manager)\.worker_((\d+)\.))");
  addRegex("envoy.listener_address", R"(^listener\.((<ADDRESS>|<TAG_VALUE>)\.))", "", "admin");
  addTokenized("envoy.virtual_host", "vhost.$.**");
  addTokenized("envoy.mongo_prefix", "mongo.$.**");
  addRegex("envoy.rds_route_config", R"(^http\.<TAG_VALUE>\.rds\.((<ROUTE_CONFIG_NAME>)\.)\w+?$)", ".rds.");
  addRegex("envoy.scoped_rds_config", R"(^http\.<TAG_VALUE>\.scoped_rds\.((<SCOPED_ROUTE_CONFIG_NAME>)\.)\w+?$)",
           ".scoped_rds.");
  addTokenized("envoy.route", "vhost.*.route.$.**");
  addTokenized("envoy.thrift_prefix", "thrift.$.**");
  addTokenized("envoy.redis_prefix", "redis.$.**");
  addTokenized("envoy.local_http_ratelimit_prefix", "$.http_local_rate_limit.**");
  addTokenized("envoy.local_network_ratelimit_prefix", "local_rate_limit.$.**");
  addTokenized("envoy.local_listener_ratelimit_prefix", "listener_local_ratelimit.$.**");
  addTokenized("envoy.dns_filter_prefix", "dns_filter.$.**");
  addTokenized("envoy.connection_limit_prefix", "connection_limit.$.**");
  addRegex("envoy.rbac_policy_name",
           R"(^http\.<TAG_VALUE>\.rbac\.(?:<TAG_VALUE>\.)?policy\.((<TAG_VALUE>)\.)(allowed|shadow_allowed|denied|shadow_denied)$)");
  addTokenized("envoy.rbac_prefix", "$.rbac.**");
  addRegex("envoy.rbac_http_prefix", R"(^http\.<TAG_VALUE>\.rbac\.((<TAG_VALUE>)\.).*?)", "", "policy");
  addRegex("envoy.proxy_protocol_prefix", R"(^proxy_proto\.((<TAG_VALUE>)\.).+$)", "", "versions");
  addRegex("envoy.proxy_protocol_version",
           R"(^proxy_proto\.((?:<TAG_VALUE>\.)?versions\.v(<PROXY_PROTOCOL_VERSION>)\.)\w+$)");
  addTokenized("envoy.google_grpc_client_prefix", "grpc.$.**");
  addRegex("envoy.tls_certificate", R"(^<LISTENER_OR_CLUSTER_WITH_NAME>\.ssl\.certificate\.((<TAG_VALUE>)\.).*$)",
           ".ssl.certificate");
  addRegex("envoy.xds_resource_name", R"(^sds\.((<TAG_VALUE>)\.).+)");
}

// TagExtractorTokensImpl::searchTags.
bool TagProducer::searchTags(const Extractor& e, const std::vector<std::string_view>& input, size_t input_index,
                             size_t pattern_index, size_t char_index, size_t& start, size_t& match_index) const {
  for (; input_index < input.size() && pattern_index < e.tokens.size(); ++input_index, ++pattern_index) {
    if (pattern_index == e.match_index) {
      start = char_index;
      match_index = input_index;
    } else {
      const std::string& expected = e.tokens[pattern_index];
      if (expected == "**") {
        if (pattern_index == e.tokens.size() - 1) {
          pattern_index = e.tokens.size();
          input_index = input.size();
          break;
        }
        ++pattern_index;
        for (; input_index < input.size(); ++input_index) {
          if (searchTags(e, input, input_index, pattern_index, char_index, start, match_index)) return true;
          char_index += input[input_index].size() + 1;
        }
        return false;
      }
      if (expected != "*" && expected != input[input_index]) return false;
      char_index += input[input_index].size() + 1;
    }
  }
  return pattern_index == e.tokens.size() && input_index == input.size();
}

bool TagProducer::extract(const Extractor& e, std::string_view name, const std::vector<std::string_view>& tokens,
                          std::vector<Tag>& tags, std::vector<std::pair<size_t, size_t>>& remove) const {
  if (e.fixed_value) {
    tags.push_back({e.name, *e.fixed_value});
    return true;
  }
  if (e.regex) {
    // TagExtractorRe2Impl::extractTag: the first group is removed, the second (or the first)
    // is the value.
    if (!e.substr.empty() && name.find(e.substr) == std::string_view::npos) return false;
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_search(name.begin(), name.end(), m, *e.regex) || m.size() < 3 || !m[1].matched ||
        m[1].length() == 0)
      return false;
    std::string value = m[2].matched && m[2].length() > 0 ? m[2].str() : m[1].str();
    if (!e.negative_match.empty() && e.negative_match == value) return false;
    tags.push_back({e.name, value});
    size_t start = static_cast<size_t>(m[1].first - name.begin());
    remove.emplace_back(start, start + static_cast<size_t>(m[1].length()));
    return true;
  }
  // TagExtractorTokensImpl::extractTag.
  size_t match_index = tokens.size(), start = 0;
  if (!searchTags(e, tokens, 0, 0, 0, start, match_index)) return false;
  std::string_view value = tokens[match_index];
  size_t end = start + value.size();
  if (match_index < tokens.size() - 1) {
    ++end;
  } else if (start > 0) {
    --start;
  }
  tags.push_back({e.name, std::string(value)});
  remove.emplace_back(start, end);
  return true;
}

// TagProducerImpl::produceTags: extractors without a prefix, then those for the name's first
// token, all on the original name; the characters each removes are cut at the end.
std::string TagProducer::produceTags(std::string_view name, std::vector<Tag>& tags) const {
  std::vector<std::pair<size_t, size_t>> remove;
  const auto tokens = splitDots(name);
  std::set<std::string> dup;
  auto run = [&](const Extractor& e) {
    if (e.other_with_same_name && dup.count(e.name)) return;
    if (extract(e, name, tokens, tags, remove) && e.other_with_same_name) dup.insert(e.name);
  };
  for (auto& e : without_prefix_) run(e);
  const size_t dot = name.find('.');
  if (dot != std::string_view::npos) {
    auto it = by_prefix_.find(name.substr(0, dot));
    if (it != by_prefix_.end()) {
      for (auto& e : it->second) run(e);
    }
  }
  std::vector<bool> cut(name.size(), false);
  for (auto& [s, e] : remove) {
    for (size_t i = s; i < e && i < name.size(); i++) cut[i] = true;
  }
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size(); i++) {
    if (!cut[i]) out.push_back(name[i]);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Store
// ---------------------------------------------------------------------------------------------

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

void Store::addFixedTag(const std::string& name, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  tag_producer_.addFixedTag(name, value);
  tagged_.clear();
}

const Store::Tagged& Store::tagged(const std::string& name) const {
  auto it = tagged_.find(name);
  if (it != tagged_.end()) return it->second;
  Tagged t;
  t.extracted = tag_producer_.produceTags(name, t.tags);
  return tagged_.emplace(name, std::move(t)).first->second;
}

bool Store::show(const Params& p, const std::string& name, bool used) const {
  if (p.used_only && !used) return false;
  if (p.filter && !std::regex_search(name, *p.filter)) return false;
  return true;
}

void Store::mergeHistograms() {
  std::vector<Histogram*> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [_, h] : histograms_) all.push_back(h.get());
  }
  for (Histogram* h : all) h->merge();
}

void Store::resetCounters() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [_, c] : counters_) c->reset();
}

namespace {

// ParentHistogramImpl::quantileSummary: "P0(interval,cumulative) P25(...) ...".
std::string quantileSummary(const Histogram& h) {
  Histogram::Snapshot iv = h.interval(), cum = h.cumulative();
  std::string out;
  for (double q : Histogram::quantiles()) {
    if (!out.empty()) out += " ";
    out += "P" + formatDouble(100 * q) + "(" + formatDouble(iv.quantile(q)) + "," + formatDouble(cum.quantile(q)) + ")";
  }
  return out;
}

// ParentHistogramImpl::bucketSummary: "B0.5(interval,cumulative) B1(...) ...".
std::string bucketSummary(const Histogram& h) {
  const auto iv = h.interval().cumulativeBuckets(), cum = h.cumulative().cumulativeBuckets();
  std::string out;
  for (size_t i = 0; i < Histogram::bounds().size(); i++) {
    if (!out.empty()) out += " ";
    out += "B" + formatDouble(Histogram::bounds()[i]) + "(" + std::to_string(iv[i]) + "," + std::to_string(cum[i]) + ")";
  }
  return out;
}

// prometheus_stats.cc sanitizeName / sanitizeValue / formattedTags.
std::string promSanitize(std::string s) {
  for (char& c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) c = '_';
  }
  return s;
}

std::string promValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"') out += "\\\"";
    else out.push_back(c);
  }
  return out;
}

std::string promTags(const std::vector<Tag>& tags) {
  std::string out;
  for (auto& t : tags) {
    if (!out.empty()) out += ",";
    out += promSanitize(t.name) + "=\"" + promValue(t.value) + "\"";
  }
  return out;
}

// StatNameLessThan compares names token by token.
bool statNameLess(const std::string& a, const std::string& b) {
  auto ta = splitDots(a), tb = splitDots(b);
  return std::lexicographical_compare(ta.begin(), ta.end(), tb.begin(), tb.end());
}

// "%.32g", as prometheus_stats.cc prints bucket bounds and sums.
std::string g32(double v) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.32g", v);
  return buf;
}

} // namespace

std::string Store::renderText(const Params& p) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> lines;
  if (p.type == Params::Type::All || p.type == Params::Type::Counters) {
    for (auto& [name, c] : counters_) {
      if (show(p, name, c->get() > 0)) lines[name] = std::to_string(c->get());
    }
  }
  if (p.type == Params::Type::All || p.type == Params::Type::Gauges) {
    for (auto& [name, g] : gauges_) {
      if (show(p, name, g->used.load())) lines[name] = std::to_string(g->get());
    }
  }
  std::string out;
  for (auto& [name, v] : lines) out += name + ": " + v + "\n";
  if (p.type == Params::Type::All || p.type == Params::Type::Histograms) {
    for (auto& [name, h] : histograms_) {
      if (!show(p, name, h->used())) continue;
      if (!h->used()) {
        out += name + ": No recorded values\n";
      } else {
        out += name + ": " + (p.buckets == Params::Buckets::Cumulative ? bucketSummary(*h) : quantileSummary(*h)) + "\n";
      }
    }
  }
  return out;
}

// StatsJsonRender: {"stats":[{"name":..,"value":..},...,{"histograms":{...}}]}.
std::string Store::renderJson(const Params& p) const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::ordered_json stats = nlohmann::ordered_json::array();
  std::map<std::string, int64_t> values;
  std::map<std::string, uint64_t> uvalues;
  if (p.type == Params::Type::All || p.type == Params::Type::Counters) {
    for (auto& [name, c] : counters_) {
      if (show(p, name, c->get() > 0)) uvalues[name] = c->get();
    }
  }
  if (p.type == Params::Type::All || p.type == Params::Type::Gauges) {
    for (auto& [name, g] : gauges_) {
      if (show(p, name, g->used.load())) values[name] = g->get();
    }
  }
  std::set<std::string> names;
  for (auto& [n, _] : values) names.insert(n);
  for (auto& [n, _] : uvalues) names.insert(n);
  for (auto& n : names) {
    nlohmann::ordered_json e;
    e["name"] = n;
    if (uvalues.count(n)) e["value"] = uvalues[n];
    else e["value"] = values[n];
    stats.push_back(e);
  }
  if (p.type == Params::Type::All || p.type == Params::Type::Histograms) {
    nlohmann::ordered_json computed = nlohmann::ordered_json::array();
    for (auto& [name, h] : histograms_) {
      if (!show(p, name, h->used())) continue;
      nlohmann::ordered_json values_json = nlohmann::ordered_json::array();
      Histogram::Snapshot iv = h->interval(), cum = h->cumulative();
      for (double q : Histogram::quantiles()) {
        nlohmann::ordered_json v = nlohmann::ordered_json::object();
        double a = iv.quantile(q), b = cum.quantile(q);
        v["interval"] = std::isnan(a) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(a);
        v["cumulative"] = std::isnan(b) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(b);
        values_json.push_back(v);
      }
      computed.push_back({{"name", name}, {"values", values_json}});
    }
    if (!computed.empty()) {
      nlohmann::ordered_json qs = nlohmann::ordered_json::array();
      for (double q : Histogram::quantiles()) qs.push_back(100 * q);
      nlohmann::ordered_json hist;
      hist["histograms"] = {{"supported_quantiles", qs}, {"computed_quantiles", computed}};
      stats.push_back(hist);
    }
  }
  nlohmann::ordered_json root;
  root["stats"] = stats;
  return root.dump(2) + "\n";
}

std::string Store::renderPrometheus(const Params& p) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  // outputStatType: one group per tag-extracted name (sorted), its metrics sorted by name.
  auto groupOf = [&](const auto& metrics, auto used) {
    std::map<std::string, std::vector<const std::string*>> groups;
    for (auto& [name, m] : metrics) {
      if (!show(p, name, used(*m))) continue;
      groups[tagged(name).extracted].push_back(&name);
    }
    std::vector<std::string> order;
    for (auto& [g, _] : groups) order.push_back(g);
    std::sort(order.begin(), order.end(), statNameLess);
    std::vector<std::pair<std::string, std::vector<const std::string*>>> sorted;
    for (auto& g : order) {
      auto v = groups[g];
      std::sort(v.begin(), v.end(), [](const std::string* a, const std::string* b) { return statNameLess(*a, *b); });
      sorted.emplace_back("envoy_" + promSanitize(g), std::move(v));
    }
    return sorted;
  };
  if (p.type == Params::Type::All || p.type == Params::Type::Counters) {
    for (auto& [prom, names] : groupOf(counters_, [](const Counter& c) { return c.get() > 0; })) {
      out += "# TYPE " + prom + " counter\n";
      for (auto* n : names) out += prom + "{" + promTags(tagged(*n).tags) + "} " + std::to_string(counters_.at(*n)->get()) + "\n";
    }
  }
  if (p.type == Params::Type::All || p.type == Params::Type::Gauges) {
    for (auto& [prom, names] : groupOf(gauges_, [](const Gauge& g) { return g.used.load(); })) {
      out += "# TYPE " + prom + " gauge\n";
      for (auto* n : names) out += prom + "{" + promTags(tagged(*n).tags) + "} " + std::to_string(gauges_.at(*n)->get()) + "\n";
    }
  }
  if (p.type == Params::Type::All || p.type == Params::Type::Histograms) {
    const auto& b = Histogram::bounds();
    for (auto& [prom, names] : groupOf(histograms_, [](const Histogram& h) { return h.used(); })) {
      const bool summary = p.buckets == Params::Buckets::Summary;
      out += "# TYPE " + prom + (summary ? " summary\n" : " histogram\n");
      for (auto* n : names) {
        const std::string tags = promTags(tagged(*n).tags);
        const std::string hist_tags = tags.empty() ? "" : tags + ",";
        const Histogram& h = *histograms_.at(*n);
        if (summary) {
          // generateSummaryOutput: the interval quantiles.
          Histogram::Snapshot iv = h.interval();
          for (double q : Histogram::quantiles()) {
            out += prom + "{" + hist_tags + "quantile=\"" + formatDouble(q) + "\"} " + g32(iv.quantile(q)) + "\n";
          }
          out += prom + "_sum{" + tags + "} " + g32(iv.sum) + "\n";
          out += prom + "_count{" + tags + "} " + std::to_string(iv.count) + "\n";
          continue;
        }
        // generateHistogramOutput: cumulative buckets since the start.
        Histogram::Snapshot cum = h.cumulative();
        const auto buckets = cum.cumulativeBuckets();
        for (size_t i = 0; i < b.size(); i++) {
          out += prom + "_bucket{" + hist_tags + "le=\"" + g32(b[i]) + "\"} " + std::to_string(buckets[i]) + "\n";
        }
        out += prom + "_bucket{" + hist_tags + "le=\"+Inf\"} " + std::to_string(cum.count) + "\n";
        out += prom + "_sum{" + tags + "} " + g32(cum.sum) + "\n";
        out += prom + "_count{" + tags + "} " + std::to_string(cum.count) + "\n";
      }
    }
  }
  return out;
}

Store& stats() {
  // Leaked on purpose: Go threads may record stats while the process exits.
  static Store* store = new Store();
  return *store;
}

} // namespace moe
