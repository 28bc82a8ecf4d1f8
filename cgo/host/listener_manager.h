// Listeners: static ones from the bootstrap and LDS ones from a file, added, updated and
// removed while the server runs (Envoy: source/common/listener_manager/listener_manager_impl.cc,
// lds_api.cc). Main thread only.
//
// An update of a listener builds a new connection manager factory (its golang filters get new
// config ids in Go); new connections go to it, connections accepted before keep the old one and
// are drained: each of their responses may carry "connection: close" with a probability that
// grows over the drain time (Envoy's gradual drain, drain_manager_impl.cc drainClose), and
// those still open when the drain time ends are closed (Envoy removes the old filter chain then).
// The old factory, with its golang filter configs, is destroyed once its last connection and
// stream are gone. A listener whose address is unchanged keeps its sockets (Envoy shares the
// socket with the new listener); a new address binds new ones, and the old ones close.
//
// Stats under "listener_manager.": listener_added, listener_modified, listener_removed,
// listener_in_place_updated, listener_create_success, listener_create_failure,
// total_listeners_active, total_listeners_draining.
#pragma once
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "dispatcher.h"
#include "server.h"
#include "stats.h"

namespace moe {

class Worker;

class ListenerManager {
public:
  // validate_only (--mode validate): listeners are created (golang configs parsed, access log
  // files opened) and their addresses checked, but nothing is bound.
  ListenerManager(Server& server, std::vector<Worker*> workers, uint64_t drain_time_ms, bool validate_only = false);

  // A bootstrap listener. Throws std::runtime_error when it cannot be created (the host then
  // exits 1, as Envoy rejects the bootstrap).
  void addStaticListener(const bootstrap::Listener& config);
  // An LDS state-of-the-world update: listeners that came by LDS and are missing are removed
  // first, then each one is added, updated (when its hash changed) or skipped. A listener that
  // cannot be created is skipped, the others applied; the result names the failures
  // ("" = accepted), and the subscription counts it as rejected (lds_api.cc).
  // version_info is the update's (shown by /config_dump).
  std::string onLdsUpdate(const std::vector<bootstrap::Listener>& listeners, const std::string& version_info = "");

  // The listeners LDS added, by name, for /config_dump's dynamic_listeners: each with the
  // version_info of the update that last added or changed it, and when. Main thread.
  struct DynamicListener {
    const bootstrap::Listener* config;
    std::string version_info;
    std::chrono::system_clock::time_point last_updated;
  };
  std::vector<DynamicListener> dynamicListeners() const;

private:
  struct ActiveListener {
    bootstrap::Listener config;
    bool added_via_api = false;
    std::shared_ptr<HttpConnectionManagerFactory> factory;
    uint64_t tag = 0;   // identifies its sockets on the workers
    uint16_t port = 0;  // the bound port
    std::string version_info;  // LDS: the update that last added or changed it
    std::chrono::system_clock::time_point last_updated;
  };

  // Creates the factory (parsing golang configs: throws when Go rejects one) and wraps it so
  // that it is always deleted on the main thread.
  std::shared_ptr<HttpConnectionManagerFactory> createFactory(const bootstrap::Listener& config);
  // Binds one socket per worker and starts accepting there; returns the bound port.
  uint16_t bindAndAdd(uint64_t tag, const bootstrap::Listener& config,
                      const std::shared_ptr<HttpConnectionManagerFactory>& factory);
  void addOrUpdate(const bootstrap::Listener& config, bool via_api, const std::string& version_info = "");
  bool removeListener(const std::string& name);
  void drain(std::shared_ptr<HttpConnectionManagerFactory> factory);
  void updateGauges();

  Server& server_;
  std::vector<Worker*> workers_;
  const uint64_t drain_time_ms_;
  const bool validate_only_;
  uint64_t next_tag_ = 1;
  std::map<std::string, ActiveListener> active_;
  struct Draining {
    std::shared_ptr<HttpConnectionManagerFactory> factory;
    TimerPtr timer;
  };
  std::list<Draining> draining_;
  Counter& listener_added_;
  Counter& listener_modified_;
  Counter& listener_removed_;
  Counter& listener_in_place_updated_;
  Counter& listener_create_success_;
  Counter& listener_create_failure_;
  Gauge& total_listeners_active_;
  Gauge& total_listeners_draining_;
};

} // namespace moe
