// Worker threads (Envoy: source/server/worker_impl.cc + listener accept): each worker runs its
// own dispatcher and accepts on its own SO_REUSEPORT socket of every listener, so the kernel
// spreads connections over workers and a connection never leaves its worker.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dispatcher_impl.h"
#include "server.h"

struct evconnlistener;
struct sockaddr;

namespace moe {

class ServerConnection;

// Creates a listening TCP socket with SO_REUSEADDR and SO_REUSEPORT on ip:port (port 0 picks
// one). Returns the fd and writes the bound port; throws std::runtime_error on failure.
int bindListenSocket(const std::string& ip, uint16_t port, uint16_t* bound_port);

class Worker {
public:
  Worker(uint32_t id, const Server& server);
  ~Worker();

  DispatcherImpl& dispatcher() { return *dispatcher_; }
  // Thread-safe (posted; before start() it runs when the loop starts): accept connections on
  // listen_fd (owned from now on) for factory; read_limit_bytes is the listener's
  // per_connection_buffer_limit_bytes. tag names the socket for the calls below.
  void addListener(uint64_t tag, int listen_fd, std::shared_ptr<HttpConnectionManagerFactory> factory,
                   uint32_t read_limit_bytes);
  // Thread-safe: connections accepted from now on on tag's socket go to factory (a listener
  // update that keeps the address; connections already open keep theirs).
  void updateListener(uint64_t tag, std::shared_ptr<HttpConnectionManagerFactory> factory,
                      uint32_t read_limit_bytes);
  // Thread-safe: stops accepting on tag's socket and closes it.
  void removeListener(uint64_t tag);
  // Thread-safe: closes the connections that factory serves, now (the end of a listener
  // drain: Envoy closes what is still open on a removed filter chain).
  void closeConnections(const HttpConnectionManagerFactory* factory);
  void start();
  // Thread-safe. Closes the listen sockets (graceful stop, first step).
  void stopListening();
  // Thread-safe. Closes idle connections; busy ones close after their response.
  void drainConnections();
  // Thread-safe. Ends the loop; join() waits for it.
  void stop();
  void join();

private:
  struct ListenerSlot {
    Worker* worker;
    uint64_t tag;
    std::shared_ptr<HttpConnectionManagerFactory> factory;
    uint32_t read_limit_bytes;
    evconnlistener* listener;
  };
  static void onAccept(evconnlistener*, int fd, sockaddr* addr, int len, void* arg);
  void accept(ListenerSlot& slot, int fd);

  const uint32_t id_;
  const Server& server_;
  std::unique_ptr<DispatcherImpl> dispatcher_;
  std::vector<std::unique_ptr<ListenerSlot>> listeners_;
  // Open connections and the factory each was accepted for (worker thread only).
  std::unordered_map<ServerConnection*, const HttpConnectionManagerFactory*> connections_;
  std::thread thread_;
};

} // namespace moe
