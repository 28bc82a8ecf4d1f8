// Dispatcher: one libevent loop per worker thread, like Envoy's Event::DispatcherImpl.
// post() is the only thread-safe method; everything else must run on the loop's thread.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

struct event_base;

namespace moe {

class Timer {
public:
  virtual ~Timer() = default;
  virtual void enableTimer(std::chrono::milliseconds ms) = 0;
  virtual void disableTimer() = 0;
  virtual bool enabled() const = 0;
};
using TimerPtr = std::unique_ptr<Timer>;

class Dispatcher {
public:
  virtual ~Dispatcher() = default;
  // "worker_N" for workers (Envoy's naming; the golang filter parses N as worker_id), "main".
  virtual const std::string& name() const = 0;
  virtual uint32_t workerId() const = 0;
  // Thread-safe: runs cb on this dispatcher's thread, in FIFO order, never inline.
  virtual void post(std::function<void()> cb) = 0;
  // True when the caller runs on this dispatcher's thread.
  virtual bool isThreadSafe() const = 0;
  virtual TimerPtr createTimer(std::function<void()> cb) = 0;
  // Runs cb on this thread after the current event completes (Envoy's deferredDelete).
  virtual void deferredDelete(std::function<void()> cb) = 0;
  virtual event_base* base() = 0;
};

} // namespace moe
