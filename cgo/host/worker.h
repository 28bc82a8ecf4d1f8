// Worker threads (Envoy: source/server/worker_impl.cc + listener accept): each worker runs its
// own dispatcher and accepts on its own SO_REUSEPORT socket of every listener, so the kernel
// spreads connections over workers and a connection never leaves its worker.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>
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
  // Before start(): accept connections on listen_fd (owned from now on) for factory;
  // read_limit_bytes is the listener's per_connection_buffer_limit_bytes.
  void addListener(int listen_fd, HttpConnectionManagerFactory& factory, uint32_t read_limit_bytes);
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
    HttpConnectionManagerFactory* factory;
    uint32_t read_limit_bytes;
    evconnlistener* listener;
  };
  static void onAccept(evconnlistener*, int fd, sockaddr* addr, int len, void* arg);
  void accept(ListenerSlot& slot, int fd);

  const uint32_t id_;
  const Server& server_;
  std::unique_ptr<DispatcherImpl> dispatcher_;
  std::vector<std::unique_ptr<ListenerSlot>> listeners_;
  std::unordered_set<ServerConnection*> connections_;  // worker thread only
  std::thread thread_;
};

} // namespace moe
