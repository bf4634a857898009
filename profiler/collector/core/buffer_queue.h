// Completed CUPTI activity buffers, handed from CUPTI's callback threads to the writer thread.
// push() is O(1) under a short lock so the training threads that complete buffers never wait on
// decoding or SQLite.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace ss::collector {

struct ActivityBuffer {
  std::uint8_t* data = nullptr;
  std::size_t valid_bytes = 0;
};

class BufferQueue {
 public:
  void push(ActivityBuffer b) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      buffers_.push_back(b);
    }
    ready_.notify_one();
  }
  // Waits up to `timeout` for at least one buffer (or stop()), then takes everything queued.
  std::vector<ActivityBuffer> take(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait_for(lock, timeout, [&] { return !buffers_.empty() || stopping_; });
    std::vector<ActivityBuffer> out(buffers_.begin(), buffers_.end());
    buffers_.clear();
    return out;
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
  }
  bool stopping() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stopping_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<ActivityBuffer> buffers_;
  bool stopping_ = false;
};

}  // namespace ss::collector
