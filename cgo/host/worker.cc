#include "worker.h"

#include <arpa/inet.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "http1_codec.h"
#include "logger.h"

namespace moe {

namespace {

// Connection ids are process-wide, as Envoy's are ([C123] in logs), so two workers never hand
// out the same id.
std::atomic<uint64_t> g_next_connection_id{1};

void addressToStrings(const sockaddr_storage& ss, std::string* ip, uint16_t* port, std::string* str) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
    *ip = buf;
    *port = ntohs(a->sin6_port);
    *str = "[" + *ip + "]:" + std::to_string(*port);
  } else {
    auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
    *ip = buf;
    *port = ntohs(a->sin_port);
    *str = *ip + ":" + std::to_string(*port);
  }
}

} // namespace

int bindListenSocket(const std::string& ip, uint16_t port, uint16_t* bound_port) {
  sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  socklen_t len;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
  } else {
    throw std::runtime_error("listener address " + ip + " is not an IP address");
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    int e = errno;
    close(fd);
    throw std::runtime_error("cannot bind " + ip + ":" + std::to_string(port) + ": " + strerror(e));
  }
  if (listen(fd, 1024) != 0) {
    int e = errno;
    close(fd);
    throw std::runtime_error(std::string("listen: ") + strerror(e));
  }
  sockaddr_storage actual;
  socklen_t alen = sizeof(actual);
  getsockname(fd, reinterpret_cast<sockaddr*>(&actual), &alen);
  *bound_port = ntohs(actual.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&actual)->sin6_port
                                                   : reinterpret_cast<sockaddr_in*>(&actual)->sin_port);
  return fd;
}

Worker::Worker(uint32_t id, const Server& server)
    : id_(id), server_(server), dispatcher_(std::make_unique<DispatcherImpl>("worker_" + std::to_string(id), id)) {}

Worker::~Worker() {
  for (auto& l : listeners_) {
    if (l->listener != nullptr) evconnlistener_free(l->listener);
  }
}

void Worker::addListener(uint64_t tag, int listen_fd, std::shared_ptr<HttpConnectionManagerFactory> factory,
                         uint32_t read_limit_bytes) {
  dispatcher_->post([this, tag, listen_fd, factory = std::move(factory), read_limit_bytes]() mutable {
    auto slot = std::make_unique<ListenerSlot>();
    slot->worker = this;
    slot->tag = tag;
    slot->factory = std::move(factory);
    slot->read_limit_bytes = read_limit_bytes;
    // backlog 0: the socket is already listening (bindListenSocket).
    slot->listener = evconnlistener_new(dispatcher_->base(), &Worker::onAccept, slot.get(),
                                        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, listen_fd);
    if (slot->listener == nullptr) {
      MOE_LOG(Error, "main", "worker %u: evconnlistener_new failed", id_);
      close(listen_fd);
      return;
    }
    // Graceful stop already began: this socket never accepts.
    if (server_.draining()) {
      evconnlistener_free(slot->listener);
      slot->listener = nullptr;
    }
    listeners_.push_back(std::move(slot));
  });
}

void Worker::updateListener(uint64_t tag, std::shared_ptr<HttpConnectionManagerFactory> factory,
                            uint32_t read_limit_bytes) {
  dispatcher_->post([this, tag, factory = std::move(factory), read_limit_bytes]() mutable {
    for (auto& l : listeners_) {
      if (l->tag == tag) {
        l->factory = std::move(factory);
        l->read_limit_bytes = read_limit_bytes;
        return;
      }
    }
  });
}

void Worker::removeListener(uint64_t tag) {
  dispatcher_->post([this, tag] {
    for (auto it = listeners_.begin(); it != listeners_.end(); ++it) {
      if ((*it)->tag == tag) {
        if ((*it)->listener != nullptr) evconnlistener_free((*it)->listener);
        listeners_.erase(it);
        return;
      }
    }
  });
}

void Worker::closeConnections(const HttpConnectionManagerFactory* factory) {
  dispatcher_->post([this, factory] {
    std::vector<ServerConnection*> victims;
    for (auto& [c, f] : connections_) {
      if (f == factory) victims.push_back(c);
    }
    for (auto* c : victims) c->closeNow();
  });
}

void Worker::start() {
  thread_ = std::thread([this] {
    MOE_LOG(Debug, "main", "worker %u started", id_);
    // Connections still open when the loop ends are left alone: the process exits next
    // (_exit), and resetting their streams would call into Go during shutdown.
    dispatcher_->run();
    MOE_LOG(Debug, "main", "worker %u stopped", id_);
  });
}

void Worker::onAccept(evconnlistener*, int fd, sockaddr*, int, void* arg) {
  auto* slot = static_cast<ListenerSlot*>(arg);
  slot->worker->accept(*slot, fd);
}

void Worker::accept(ListenerSlot& slot, int fd) {
  if (server_.draining()) {
    close(fd);
    return;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ConnectionInfo info;
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0)
    addressToStrings(ss, &info.local_ip, &info.local_port, &info.local_str);
  len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0)
    addressToStrings(ss, &info.remote_ip, &info.remote_port, &info.remote_str);
  info.id = g_next_connection_id.fetch_add(1);
  MOE_LOG(Debug, "conn_handler", "[C%lu] new connection from %s", static_cast<unsigned long>(info.id),
          info.remote_str.c_str());
  ServerConnection* conn = ServerConnection::create(*dispatcher_, fd, info, *slot.factory, server_, slot.read_limit_bytes,
                                                    [this](ServerConnection* c) { connections_.erase(c); });
  connections_[conn] = slot.factory.get();
}

void Worker::stopListening() {
  dispatcher_->post([this] {
    for (auto& l : listeners_) {
      if (l->listener != nullptr) {
        evconnlistener_free(l->listener);
        l->listener = nullptr;
      }
    }
  });
}

void Worker::drainConnections() {
  dispatcher_->post([this] {
    std::vector<ServerConnection*> snapshot;
    for (auto& [c, f] : connections_) snapshot.push_back(c);
    for (auto* c : snapshot) c->onDrain();
  });
}

void Worker::stop() { dispatcher_->exit(); }

void Worker::join() {
  if (thread_.joinable()) thread_.join();
}

} // namespace moe
