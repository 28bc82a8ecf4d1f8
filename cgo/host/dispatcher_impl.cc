#include "dispatcher_impl.h"

#include <event2/event.h>
#include <event2/thread.h>

#include <stdexcept>

namespace moe {
namespace {

class TimerImpl : public Timer {
public:
  TimerImpl(event_base* base, std::function<void()> cb) : cb_(std::move(cb)) {
    ev_ = event_new(base, -1, 0, &TimerImpl::onFire, this);
  }
  ~TimerImpl() override { event_free(ev_); }
  void enableTimer(std::chrono::milliseconds ms) override {
    struct timeval tv;
    tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
    event_add(ev_, &tv);
  }
  void disableTimer() override { event_del(ev_); }
  bool enabled() const override { return event_pending(ev_, EV_TIMEOUT, nullptr) != 0; }

private:
  static void onFire(int, short, void* arg) {
    // The callback may delete its own timer: run a copy, so the std::function being executed
    // is not the one destroyed with the timer.
    std::function<void()> cb = static_cast<TimerImpl*>(arg)->cb_;
    cb();
  }
  std::function<void()> cb_;
  event* ev_;
};

} // namespace

DispatcherImpl::DispatcherImpl(std::string name, uint32_t worker_id)
    : name_(std::move(name)), worker_id_(worker_id), thread_id_(std::this_thread::get_id()) {
  base_ = event_base_new();
  if (base_ == nullptr) throw std::runtime_error("event_base_new failed");
  post_event_ = event_new(base_, -1, 0, &DispatcherImpl::onPostEvent, this);
  deferred_event_ = event_new(base_, -1, 0, &DispatcherImpl::onDeferredEvent, this);
}

DispatcherImpl::~DispatcherImpl() {
  event_free(post_event_);
  event_free(deferred_event_);
  event_base_free(base_);
}

void DispatcherImpl::post(std::function<void()> cb) {
  bool first;
  {
    std::lock_guard<std::mutex> lock(post_mu_);
    first = posted_.empty();
    posted_.push_back(std::move(cb));
  }
  // event_active is thread-safe once evthread_use_pthreads() ran; it wakes the loop through the
  // base's notify fd. Activating an already active event is a no-op, hence "first" is an
  // optimisation only.
  if (first) event_active(post_event_, 0, 0);
}

bool DispatcherImpl::isThreadSafe() const { return thread_id_.load() == std::this_thread::get_id(); }

TimerPtr DispatcherImpl::createTimer(std::function<void()> cb) {
  return std::make_unique<TimerImpl>(base_, std::move(cb));
}

void DispatcherImpl::deferredDelete(std::function<void()> cb) {
  deferred_.push_back(std::move(cb));
  // Active events run after the current callback returns, which is the point: the object being
  // deleted may still be on the stack.
  if (deferred_.size() == 1) event_active(deferred_event_, 0, 0);
}

void DispatcherImpl::onPostEvent(int, short, void* arg) { static_cast<DispatcherImpl*>(arg)->runPosted(); }
void DispatcherImpl::onDeferredEvent(int, short, void* arg) {
  static_cast<DispatcherImpl*>(arg)->runDeferred();
}

void DispatcherImpl::runPosted() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(post_mu_);
    batch.swap(posted_);
  }
  for (auto& cb : batch) cb();
  // Callbacks posted while running this batch re-activated the event (posted_ was empty).
  runDeferred();
}

void DispatcherImpl::runDeferred() {
  while (!deferred_.empty()) {
    std::vector<std::function<void()>> batch;
    batch.swap(deferred_);
    for (auto& cb : batch) cb();
  }
}

void DispatcherImpl::run() {
  thread_id_.store(std::this_thread::get_id());
  event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY);
  runDeferred();
}

void DispatcherImpl::exit() {
  post([this] { event_base_loopbreak(base_); });
}

} // namespace moe
