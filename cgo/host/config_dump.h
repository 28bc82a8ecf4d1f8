// The admin /config_dump (Envoy: source/server/admin/config_dump_handler.cc with the config
// trackers' dumps: listener_manager_impl.cc, cluster_manager_impl.cc, rds_impl.cc): moectl's dump
// of the bootstrap (static resources, redacted) plus what came by filesystem xDS since,
// as Envoy's envoy.admin.v3.ListenersConfigDump.dynamic_listeners,
// ClustersConfigDump.dynamic_active_clusters and RoutesConfigDump.dynamic_route_configs, each
// with its update's version_info and last_updated. Main thread.
#pragma once
#include <string>

namespace moe {

class ListenerManager;
class ClusterManagerImpl;

struct ConfigDumpSources {
  std::string static_dump;                  // moectl's (bootstrap JSON "config_dump"); "" = none
  const ListenerManager* listeners = nullptr;
  const ClusterManagerImpl* clusters = nullptr;
  std::string lds_version_info, cds_version_info;  // the subscriptions' last accepted versions
};

// Pretty JSON (two spaces) ending in a newline.
std::string buildConfigDump(const ConfigDumpSources& src);

} // namespace moe
