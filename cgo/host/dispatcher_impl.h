// DispatcherImpl: a libevent event_base plus a thread-safe post queue and a deferred-delete list
// (Envoy: source/common/event/dispatcher_impl.cc). evthread_use_pthreads() must have been called
// before the first DispatcherImpl is built, so that event_active() from another thread wakes the
// loop.
#pragma once
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dispatcher.h"

struct event;

namespace moe {

class DispatcherImpl : public Dispatcher {
public:
  DispatcherImpl(std::string name, uint32_t worker_id);
  ~DispatcherImpl() override;

  const std::string& name() const override { return name_; }
  uint32_t workerId() const override { return worker_id_; }
  void post(std::function<void()> cb) override;
  bool isThreadSafe() const override;
  TimerPtr createTimer(std::function<void()> cb) override;
  void deferredDelete(std::function<void()> cb) override;
  event_base* base() override { return base_; }

  // Runs the loop on the calling thread until exit(); that thread becomes the dispatcher's thread.
  void run();
  // Thread-safe: makes run() return after the current iteration.
  void exit();

private:
  static void onPostEvent(int, short, void* arg);
  static void onDeferredEvent(int, short, void* arg);
  void runPosted();
  void runDeferred();

  const std::string name_;
  const uint32_t worker_id_;
  event_base* base_;
  event* post_event_;
  event* deferred_event_;
  std::mutex post_mu_;
  std::vector<std::function<void()>> posted_;  // guarded by post_mu_
  std::vector<std::function<void()>> deferred_; // loop thread only
  std::atomic<std::thread::id> thread_id_;
};

} // namespace moe
