/*
 * gate_test.cpp -- gcl_gate.h's host side against a CPU emulation of one CUDA stream.
 *
 * The stream is a worker thread that runs queued operations in order: the gate (spin on
 * GateWords::open, give up after a timeout, as gate_kernel does), events (take a
 * sequence number and a time), kernels (sleep). The host side is the tool's: gate_begin
 * in the launch callback's entry, then the launch call, then gate_end in its exit.
 *
 *   gate_test   exit 0 when every check holds, else one line per failed check
 */
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "gcl_gate.h"

using Clock = std::chrono::steady_clock;

static std::atomic<uint64_t> seq{0}; /* one order for host and stream events */

struct Stream {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> ops;
  bool busy = false, quit = false;
  std::thread worker{[this] { run(); }};

  void run() {
    for (;;) {
      std::function<void()> op;
      {
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return quit || !ops.empty(); });
        if (ops.empty()) return;
        op = std::move(ops.front());
        ops.pop_front();
        busy = true;
      }
      op();
      {
        std::lock_guard<std::mutex> l(mu);
        busy = false;
      }
      cv.notify_all();
    }
  }
  void enqueue(std::function<void()> op) {
    {
      std::lock_guard<std::mutex> l(mu);
      ops.push_back(std::move(op));
    }
    cv.notify_all();
  }
  void wait_idle() {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return ops.empty() && !busy; });
  }
  ~Stream() {
    {
      std::lock_guard<std::mutex> l(mu);
      quit = true;
    }
    cv.notify_all();
    worker.join();
  }
};

struct Event {
  std::atomic<bool> done{false};
  uint64_t order = 0;
  Clock::time_point at;
};

/* gcl_gate.h's Driver, over the emulated stream */
struct EmuDriver {
  Stream &s;
  gcl::GateWords *w;
  std::chrono::milliseconds timeout;
  Event start, stop;

  EmuDriver(Stream &stream, gcl::GateWords *words, std::chrono::milliseconds gate_timeout)
      : s(stream), w(words), timeout(gate_timeout) {}

  static void stamp(Event &e) {
    e.order = ++seq;
    e.at = Clock::now();
    e.done = true;
  }
  void launch_gate() {
    s.enqueue([w = w, t = timeout] {
      const auto t0 = Clock::now();
      while (!__atomic_load_n(&w->open, __ATOMIC_ACQUIRE)) {
        if (Clock::now() - t0 > t) {
          w->timed_out = 1;
          break;
        }
      }
    });
  }
  void record_start() { s.enqueue([this] { stamp(start); }); }
  void record_stop() { s.enqueue([this] { stamp(stop); }); }
  void sync_stop() {
    while (!stop.done) std::this_thread::yield();
  }
};

static int failures = 0;
static void check(bool ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s\n", what);
    failures++;
  }
}

/* A launch call that takes `latency` on the host before its kernel is queued; returns
 * the order number of the moment the kernel was queued. */
static uint64_t launch(Stream &s, std::chrono::milliseconds latency, std::chrono::milliseconds kernel,
                       bool waits_for_idle_stream) {
  std::this_thread::sleep_for(latency);
  if (waits_for_idle_stream) s.wait_idle(); /* lazy loading's context synchronization */
  const uint64_t queued = ++seq;
  s.enqueue([kernel] { std::this_thread::sleep_for(kernel); });
  return queued;
}

int main() {
  using std::chrono::milliseconds;
  gcl::GateWords words{};
  Stream s;

  /* 1. The start event fires after the kernel is queued, so the host's launch latency is
   *    not in the measured time. */
  {
    EmuDriver d{s, &words, milliseconds(5000)};
    gcl::gate_begin(d, &words);
    const uint64_t queued = launch(s, milliseconds(30), milliseconds(2), false);
    const bool opened = gcl::gate_end(d, &words);
    check(opened, "a launch queued in time opens the gate without its timeout");
    check(d.start.order > queued, "the start event fires after the kernel is queued, not before");
    check(d.stop.order > d.start.order, "the stop event follows the start event");
    const double ms = std::chrono::duration<double, std::milli>(d.stop.at - d.start.at).count();
    check(ms >= 2.0, "the measured time includes the kernel");
    printf("gated: %.2f ms for a 2 ms kernel after 30 ms of launch latency\n", ms);
  }
  /* the same launch without the gate: the emulator does show the bias the gate removes */
  {
    EmuDriver d{s, &words, milliseconds(5000)};
    d.record_start();
    const uint64_t queued = launch(s, milliseconds(30), milliseconds(2), false);
    d.record_stop();
    d.sync_stop();
    check(d.start.order < queued, "ungated, the start event fires before the kernel is queued");
    const double ms = std::chrono::duration<double, std::milli>(d.stop.at - d.start.at).count();
    check(ms >= 30.0, "ungated, the measured time includes the launch latency");
    printf("ungated: %.2f ms\n", ms);
  }
  /* 2. A launch call that waits for the stream to go idle: the gate gives up after its
   *    timeout instead of deadlocking, and says so. */
  {
    EmuDriver d{s, &words, milliseconds(50)};
    gcl::gate_begin(d, &words);
    launch(s, milliseconds(0), milliseconds(1), true);
    const bool opened = gcl::gate_end(d, &words);
    check(!opened, "a gate that timed out is reported");
  }
  /* 3. The next launch starts from a closed gate and a clear timeout flag. */
  {
    EmuDriver d{s, &words, milliseconds(5000)};
    gcl::gate_begin(d, &words);
    const uint64_t queued = launch(s, milliseconds(5), milliseconds(1), false);
    const bool opened = gcl::gate_end(d, &words);
    check(opened, "a timeout does not carry over to the next launch");
    check(d.start.order > queued, "the next launch is gated again");
  }
  s.wait_idle();
  if (failures == 0) printf("gate: all checks hold\n");
  return failures ? 1 : 0;
}
