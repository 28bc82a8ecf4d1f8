#include "config_dump.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>

#include "cluster.h"
#include "listener_manager.h"
#include "route_config_provider.h"

namespace moe {

namespace {

using ojson = nlohmann::ordered_json;

// A google.protobuf.Timestamp as protojson writes it (RFC 3339, UTC, fractional seconds only
// when not zero); milliseconds are enough here.
std::string timestamp(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out(buf);
  if (ms % 1000 != 0) {
    char frac[8];
    snprintf(frac, sizeof(frac), ".%03lld", static_cast<long long>(ms % 1000));
    out += frac;
  }
  return out + "Z";
}

// A resource's dump from moectl (an Any as JSON text); null when there is none.
ojson parseAny(const std::string& text) {
  if (text.empty()) return nullptr;
  ojson v = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  return v.is_discarded() ? ojson(nullptr) : v;
}

// obj with key inserted right after "@type" (protojson's field order: version_info is field 1).
ojson withAfterType(const ojson& obj, const std::string& key, ojson value) {
  ojson out = ojson::object();
  bool placed = false;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (it.key() == key) continue;
    out[it.key()] = it.value();
    if (it.key() == "@type") {
      out[key] = value;
      placed = true;
    }
  }
  if (!placed) out[key] = std::move(value);
  return out;
}

bool hasType(const ojson& v, const char* type) {
  return v.is_object() && v.contains("@type") && v["@type"] == std::string("type.googleapis.com/") + type;
}

} // namespace

std::string buildConfigDump(const ConfigDumpSources& src) {
  if (src.static_dump.empty()) return "{\"configs\": []}\n";
  ojson dump = ojson::parse(src.static_dump, nullptr, false);
  if (dump.is_discarded() || !dump.is_object() || !dump.contains("configs") || !dump["configs"].is_array())
    return src.static_dump;

  ojson dynamic_listeners = ojson::array();
  ojson lds_route_configs = ojson::array();  // inline route configs of LDS listeners (static ones)
  if (src.listeners != nullptr) {
    for (auto& l : src.listeners->dynamicListeners()) {
      ojson listener = parseAny(l.config->dump);
      if (listener.is_null()) continue;
      ojson state = ojson::object();
      if (!l.version_info.empty()) state["version_info"] = l.version_info;
      state["listener"] = std::move(listener);
      state["last_updated"] = timestamp(l.last_updated);
      ojson entry = ojson::object();
      entry["name"] = l.config->name;
      entry["active_state"] = std::move(state);
      dynamic_listeners.push_back(std::move(entry));
      ojson rc = parseAny(l.config->route_config_dump);
      if (!rc.is_null()) {
        ojson s = ojson::object();
        s["route_config"] = std::move(rc);
        s["last_updated"] = timestamp(l.last_updated);
        lds_route_configs.push_back(std::move(s));
      }
    }
  }
  ojson dynamic_clusters = ojson::array();
  if (src.clusters != nullptr) {
    for (auto& c : src.clusters->dynamicClusters()) {
      ojson cluster = parseAny(c.cluster->config().dump);
      if (cluster.is_null()) continue;
      ojson entry = ojson::object();
      if (!c.version_info.empty()) entry["version_info"] = c.version_info;
      entry["cluster"] = std::move(cluster);
      entry["last_updated"] = timestamp(c.last_updated);
      dynamic_clusters.push_back(std::move(entry));
    }
  }
  ojson dynamic_routes = ojson::array();
  for (auto& r : dynamicRouteConfigs()) {
    ojson rc = parseAny(r.config->config().dump);
    if (rc.is_null()) continue;
    ojson entry = ojson::object();
    if (!r.version_info.empty()) entry["version_info"] = r.version_info;
    entry["route_config"] = std::move(rc);
    entry["last_updated"] = timestamp(r.last_updated);
    dynamic_routes.push_back(std::move(entry));
  }

  for (auto& c : dump["configs"]) {
    if (hasType(c, "envoy.admin.v3.ListenersConfigDump")) {
      if (!src.lds_version_info.empty()) c = withAfterType(c, "version_info", src.lds_version_info);
      if (!dynamic_listeners.empty()) c["dynamic_listeners"] = dynamic_listeners;
    } else if (hasType(c, "envoy.admin.v3.ClustersConfigDump")) {
      if (!src.cds_version_info.empty()) c = withAfterType(c, "version_info", src.cds_version_info);
      if (!dynamic_clusters.empty()) c["dynamic_active_clusters"] = dynamic_clusters;
    } else if (hasType(c, "envoy.admin.v3.RoutesConfigDump")) {
      if (!lds_route_configs.empty()) {
        ojson statics = c.contains("static_route_configs") ? c["static_route_configs"] : ojson::array();
        for (auto& s : lds_route_configs) statics.push_back(s);
        ojson out = ojson::object();
        for (auto it = c.begin(); it != c.end(); ++it) {
          if (it.key() != "static_route_configs") out[it.key()] = it.value();
        }
        // static_route_configs is field 1, after @type.
        c = withAfterType(out, "static_route_configs", std::move(statics));
      }
      if (!dynamic_routes.empty()) c["dynamic_route_configs"] = dynamic_routes;
    }
  }
  return dump.dump(2) + "\n";
}

} // namespace moe
