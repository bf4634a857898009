// Hands items, in batches, from one producer thread to one worker thread that consumes them in
// order (the profile writer's SQLite inserts, so that an importer parses while rows are written).
// The queue is bounded: a producer that runs ahead waits, so memory stays at most
// (max_batches + 2) x batch_items items. An exception thrown by `consume` stops the worker; the
// producer gets it (rethrown) at its next push() or drain(), and later batches are dropped.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "storage/thread_cpu_time.h"

namespace ss {

template <typename Item>
class BackgroundBatches {
 public:
  using Consume = std::function<void(std::vector<Item>& batch)>;

  BackgroundBatches(Consume consume, std::size_t batch_items, std::size_t max_batches)
      : consume_(std::move(consume)), batch_items_(batch_items), max_batches_(max_batches) {
    current_.reserve(batch_items_);
    worker_ = std::thread([this] { run(); });
  }
  // Stops the worker without consuming what is still queued (the caller is abandoning the work).
  ~BackgroundBatches() { stop(); }
  BackgroundBatches(const BackgroundBatches&) = delete;
  BackgroundBatches& operator=(const BackgroundBatches&) = delete;

  void push(Item&& item) {
    current_.push_back(std::move(item));
    if (current_.size() >= batch_items_) hand_off();
  }

  // Hands off the partial batch and waits until the worker has consumed everything; rethrows
  // the worker's exception, if any.
  void drain() {
    hand_off();
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return error_ || (queue_.empty() && !busy_); });
    if (error_) std::rethrow_exception(error_);
  }

  // CPU seconds the worker spent consuming so far (benchmarks: the SQLite share of an import;
  // CPU time, not wall time, so that other processes on the machine do not inflate it).
  double busy_seconds() {
    std::lock_guard lock(mutex_);
    return busy_seconds_;
  }

  // Joins the worker; queued batches are dropped. Idempotent.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

 private:
  void hand_off() {
    std::unique_lock lock(mutex_);
    if (error_) std::rethrow_exception(error_);
    if (current_.empty()) return;
    space_.wait(lock, [&] { return error_ || queue_.size() < max_batches_; });
    if (error_) std::rethrow_exception(error_);
    queue_.push_back(std::move(current_));
    if (!spare_.empty()) {
      current_ = std::move(spare_.back());  // a consumed batch's buffer: no reallocation
      spare_.pop_back();
    } else {
      current_ = {};
      current_.reserve(batch_items_);
    }
    lock.unlock();
    ready_.notify_one();
  }

  void run() {
    for (;;) {
      std::vector<Item> batch;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
      }
      space_.notify_one();
      std::exception_ptr failed;
      const double t0 = thread_cpu_seconds();
      try {
        consume_(batch);
      } catch (...) {
        failed = std::current_exception();
      }
      batch.clear();
      const double took = thread_cpu_seconds() - t0;
      {
        std::lock_guard lock(mutex_);
        busy_ = false;
        busy_seconds_ += took;
        if (failed) {
          error_ = failed;
          queue_.clear();
        } else if (spare_.size() < 2) {
          spare_.push_back(std::move(batch));
        }
      }
      space_.notify_all();
      idle_.notify_all();
    }
  }

  Consume consume_;
  const std::size_t batch_items_, max_batches_;
  std::vector<Item> current_;  // the producer's batch being filled (producer thread only)
  std::mutex mutex_;
  std::condition_variable ready_, space_, idle_;
  std::deque<std::vector<Item>> queue_;
  std::vector<std::vector<Item>> spare_;
  std::exception_ptr error_;
  bool busy_ = false, stopping_ = false;
  double busy_seconds_ = 0;
  std::thread worker_;
};

}  // namespace ss
