#include <catch2/catch.hpp>

#include <thread>

#include "profiler/collector/core/buffer_queue.h"

using namespace ss::collector;

TEST_CASE("buffers pushed from other threads reach the writer in order; stop wakes it") {
  BufferQueue q;
  std::uint8_t a[4], b[4];
  std::thread producer([&] {
    q.push({a, 1});
    q.push({b, 2});
  });
  producer.join();
  auto got = q.take(std::chrono::milliseconds(1000));
  REQUIRE(got.size() == 2);
  CHECK(got[0].data == a);
  CHECK(got[1].valid_bytes == 2);
  CHECK(q.take(std::chrono::milliseconds(10)).empty());  // times out empty

  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    q.stop();
  });
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(q.take(std::chrono::seconds(30)).empty());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  CHECK(q.stopping());
  stopper.join();
}
