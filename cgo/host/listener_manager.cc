#include "listener_manager.h"

#include <http_parser.h>

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>

#include "logger.h"
#include "worker.h"

namespace moe {

// ---------------------------------------------------------------------------------------------
// Drain decision (server.h)
// ---------------------------------------------------------------------------------------------

namespace {
int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

void HttpConnectionManagerFactory::startDrain(uint64_t drain_time_ms) {
  drain_time_ms_.store(drain_time_ms);
  int64_t expected = 0;
  drain_start_ns_.compare_exchange_strong(expected, nowNs());
}

// drain_manager_impl.cc drainClose (gradual): P(true) = elapsed / drain time.
bool HttpConnectionManagerFactory::drainClose() const {
  int64_t start = drain_start_ns_.load();
  if (start == 0) return false;
  uint64_t drain_ms = drain_time_ms_.load();
  if (drain_ms == 0) return true;
  double elapsed_ms = static_cast<double>(nowNs() - start) / 1e6;
  if (elapsed_ms >= static_cast<double>(drain_ms)) return true;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return elapsed_ms > static_cast<double>(rng() % drain_ms);
}

// ---------------------------------------------------------------------------------------------
// ListenerManager
// ---------------------------------------------------------------------------------------------

namespace {
// Validation binds nothing, but the address must be one a listener could bind.
void checkListenAddress(const std::string& ip) {
  in6_addr tmp;
  if (inet_pton(AF_INET, ip.c_str(), &tmp) != 1 && inet_pton(AF_INET6, ip.c_str(), &tmp) != 1)
    throw std::runtime_error("listener address " + ip + " is not an IP address");
}
} // namespace

ListenerManager::ListenerManager(Server& server, std::vector<Worker*> workers, uint64_t drain_time_ms,
                                 bool validate_only)
    : server_(server), workers_(std::move(workers)), drain_time_ms_(drain_time_ms), validate_only_(validate_only),
      listener_added_(stats().counter("listener_manager.listener_added")),
      listener_modified_(stats().counter("listener_manager.listener_modified")),
      listener_removed_(stats().counter("listener_manager.listener_removed")),
      listener_in_place_updated_(stats().counter("listener_manager.listener_in_place_updated")),
      listener_create_success_(stats().counter("listener_manager.listener_create_success")),
      listener_create_failure_(stats().counter("listener_manager.listener_create_failure")),
      total_listeners_active_(stats().gauge("listener_manager.total_listeners_active")),
      total_listeners_draining_(stats().gauge("listener_manager.total_listeners_draining")) {}

std::shared_ptr<HttpConnectionManagerFactory> ListenerManager::createFactory(const bootstrap::Listener& config) {
  std::unique_ptr<HttpConnectionManagerFactory> f = createHttpConnectionManagerFactory(config, server_);
  // http_parser's own header limit is process-wide; keep it above every listener's
  // max_request_headers_kb so the codec's Envoy-style count decides (431), not the parser.
  static uint32_t parser_limit = 0;
  uint32_t want = std::max<uint32_t>(80 * 1024, f->maxRequestHeadersBytes() * 2 + 8192);
  if (want > parser_limit) {
    parser_limit = want;
    http_parser_set_max_header_size(parser_limit);
  }
  // The last reference may drop on a worker (its last connection); the factory owns things of
  // the main thread (an RDS subscription and its file watch), so it is deleted there.
  Dispatcher* main = &server_.mainDispatcher();
  return std::shared_ptr<HttpConnectionManagerFactory>(f.release(), [main](HttpConnectionManagerFactory* p) {
    main->post([p] { delete p; });
  });
}

uint16_t ListenerManager::bindAndAdd(uint64_t tag, const bootstrap::Listener& config,
                                     const std::shared_ptr<HttpConnectionManagerFactory>& factory) {
  uint16_t port = config.address.port;
  std::vector<int> fds;
  try {
    for (size_t i = 0; i < workers_.size(); i++) {
      uint16_t bound = 0;
      // The first socket may pick the port (port 0); the others join it with SO_REUSEPORT.
      fds.push_back(bindListenSocket(config.address.address, port, &bound));
      port = bound;
    }
  } catch (...) {
    for (int fd : fds) close(fd);
    listener_create_failure_.inc();
    throw;
  }
  // Its stats are named after the bound address; set before any worker accepts for it.
  factory->setListenerAddress(config.address.address, port);
  for (size_t i = 0; i < workers_.size(); i++) {
    workers_[i]->addListener(tag, fds[i], factory, config.per_connection_buffer_limit_bytes);
    listener_create_success_.inc();
  }
  MOE_LOG(Info, "main", "listener %s bound to %s:%u", config.name.c_str(), config.address.address.c_str(),
          static_cast<unsigned>(port));
  return port;
}

void ListenerManager::addStaticListener(const bootstrap::Listener& config) { addOrUpdate(config, false); }

// listener_manager_impl.cc addOrUpdateListenerInternal.
void ListenerManager::addOrUpdate(const bootstrap::Listener& config, bool via_api, const std::string& version_info) {
  auto it = active_.find(config.name);
  if (it == active_.end()) {
    ActiveListener l;
    l.config = config;
    l.added_via_api = via_api;
    l.version_info = version_info;
    l.last_updated = std::chrono::system_clock::now();
    l.factory = createFactory(config);
    l.tag = next_tag_++;
    if (validate_only_) {
      checkListenAddress(config.address.address);
      active_[config.name] = std::move(l);
      return;
    }
    l.port = bindAndAdd(l.tag, config, l.factory);
    active_[config.name] = std::move(l);
    listener_added_.inc();
    updateGauges();
    return;
  }
  ActiveListener& old = it->second;
  if (!old.added_via_api) {
    throw std::runtime_error("listener '" + config.name + "' can not be updated because it was not added via API");
  }
  if (!config.hash.empty() && config.hash == old.config.hash) {
    MOE_LOG(Debug, "main", "duplicate/locked listener '%s'. no add/update", config.name.c_str());
    return;
  }
  // Built before anything changes: a rejected golang config leaves the listener as it was.
  std::shared_ptr<HttpConnectionManagerFactory> factory = createFactory(config);
  std::shared_ptr<HttpConnectionManagerFactory> previous = old.factory;
  const bool same_socket = config.address.address == old.config.address.address &&
                           (config.address.port == old.config.address.port || config.address.port == 0);
  if (same_socket) {
    // The sockets stay; accepts switch to the new factory (Envoy: the new listener takes the
    // old one's socket, listener_manager_impl.cc setupSocketFactoryForListener).
    factory->setListenerAddress(config.address.address, old.port);
    for (auto* w : workers_) w->updateListener(old.tag, factory, config.per_connection_buffer_limit_bytes);
    if (config.per_connection_buffer_limit_bytes == old.config.per_connection_buffer_limit_bytes)
      listener_in_place_updated_.inc();
  } else {
    uint64_t tag = next_tag_++;
    uint16_t port = bindAndAdd(tag, config, factory);  // throws: nothing changed yet
    for (auto* w : workers_) w->removeListener(old.tag);
    old.tag = tag;
    old.port = port;
  }
  old.config = config;
  old.factory = factory;
  old.version_info = version_info;
  old.last_updated = std::chrono::system_clock::now();
  listener_modified_.inc();
  MOE_LOG(Info, "main", "listener %s updated; draining the connections of the previous version", config.name.c_str());
  drain(std::move(previous));
  updateGauges();
}

bool ListenerManager::removeListener(const std::string& name) {
  auto it = active_.find(name);
  if (it == active_.end() || !it->second.added_via_api) return false;
  for (auto* w : workers_) w->removeListener(it->second.tag);
  std::shared_ptr<HttpConnectionManagerFactory> factory = std::move(it->second.factory);
  active_.erase(it);
  listener_removed_.inc();
  drain(std::move(factory));
  updateGauges();
  return true;
}

// listener_manager_impl.cc drainListener / drainFilterChains: the drain sequence runs for the
// drain time, then what is still open is closed.
void ListenerManager::drain(std::shared_ptr<HttpConnectionManagerFactory> factory) {
  factory->startDrain(drain_time_ms_);
  draining_.push_back(Draining{std::move(factory), nullptr});
  auto entry = std::prev(draining_.end());
  entry->timer = server_.mainDispatcher().createTimer([this, entry] {
    for (auto* w : workers_) w->closeConnections(entry->factory.get());
    // The factory goes when its last connection and stream do (they hold it).
    draining_.erase(entry);
    updateGauges();
  });
  entry->timer->enableTimer(std::chrono::milliseconds(drain_time_ms_));
  updateGauges();
}

std::vector<ListenerManager::DynamicListener> ListenerManager::dynamicListeners() const {
  std::vector<DynamicListener> out;
  for (auto& [name, l] : active_) {
    if (l.added_via_api) out.push_back(DynamicListener{&l.config, l.version_info, l.last_updated});
  }
  return out;
}

void ListenerManager::updateGauges() {
  total_listeners_active_.set(static_cast<int64_t>(active_.size()));
  total_listeners_draining_.set(static_cast<int64_t>(draining_.size()));
}

// lds_api.cc onConfigUpdate (state of the world): removals first, so a listener may take the
// address of one that goes; then each resource; failures are collected.
std::string ListenerManager::onLdsUpdate(const std::vector<bootstrap::Listener>& listeners,
                                         const std::string& version_info) {
  std::map<std::string, const bootstrap::Listener*> wanted;
  for (auto& l : listeners) wanted.emplace(l.name, &l);
  std::vector<std::string> to_remove;
  for (auto& [name, l] : active_) {
    if (l.added_via_api && !wanted.count(name)) to_remove.push_back(name);
  }
  for (auto& name : to_remove) {
    if (removeListener(name)) MOE_LOG(Info, "main", "lds: remove listener '%s'", name.c_str());
  }
  std::string message;
  std::map<std::string, bool> seen;
  for (auto& l : listeners) {
    if (seen[l.name]) {
      message += l.name + ": duplicate listener " + l.name + " found\n";
      continue;
    }
    seen[l.name] = true;
    try {
      addOrUpdate(l, true, version_info);
    } catch (const std::exception& e) {
      MOE_LOG(Warn, "main", "lds: listener '%s' config rejected: %s", l.name.c_str(), e.what());
      message += l.name + ": " + e.what() + "\n";
    }
  }
  if (!message.empty()) return "Error adding/updating listener(s) " + message;
  return "";
}

} // namespace moe
