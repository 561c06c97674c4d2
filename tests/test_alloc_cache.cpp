// The allocation cache every device puts in front of its allocator (runtime/alloc_cache.hpp):
// reuse by rounded size, the byte cap, the retry after an out-of-memory error, and concurrent use.
// A fake device counts what reaches it. (The devices' own use of it runs in test_runtime,
// test_vulkan and test_cuda.)
#include <doctest/doctest.h>

#include <tg/runtime/alloc_cache.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace {
/// A device whose memory is counted: blocks from the heap, a limit on the bytes live at once.
struct FakeDevice {
  std::size_t live = 0, limit = ~std::size_t(0);
  int allocated = 0, released = 0;
  std::map<void*, std::size_t> blocks; // live blocks -> size
  std::vector<std::size_t> sizes;      // of each allocation, in order
  tg::AllocCache cache{64,
                       [this](std::size_t n) -> void* {
                         if (live + n > limit) throw tg::device_error("fake: out of memory");
                         void* p = ::operator new(n);
                         live += n;
                         allocated++;
                         sizes.push_back(n);
                         blocks[p] = n;
                         return p;
                       },
                       [this](void* p) {
                         CHECK(blocks.count(p) == 1);
                         live -= blocks[p];
                         blocks.erase(p);
                         released++;
                         ::operator delete(p);
                       },
                       1024};
  void* alloc(std::size_t bytes) { return cache.alloc(bytes); }
};
} // namespace

TEST_CASE("alloc_cache: sizes round up to the granule, and a freed block is reused by size") {
  FakeDevice d;
  CHECK(d.cache.round(0) == 64);
  CHECK(d.cache.round(1) == 64);
  CHECK(d.cache.round(64) == 64);
  CHECK(d.cache.round(65) == 128);
  void* a = d.alloc(100); // 128 bytes
  CHECK(d.sizes == std::vector<std::size_t>{128});
  d.cache.free(a);
  CHECK(d.cache.cached_bytes() == 128);
  CHECK(d.released == 0);
  void* b = d.alloc(120); // same rounded size: the cached block
  CHECK(b == a);
  CHECK(d.allocated == 1);
  CHECK(d.cache.cached_bytes() == 0);
  void* c = d.alloc(200); // another size: a new block
  CHECK(c != a);
  CHECK(d.allocated == 2);
  d.cache.free(b);
  d.cache.free(c);
  d.cache.free(c); // a second free of the same block (or one alloc() did not return) is ignored
  CHECK(d.cache.cached_bytes() == 128 + 256);
  CHECK(d.cache.trim() == 128 + 256);
  CHECK(d.released == 2);
  CHECK(d.live == 0);
}

TEST_CASE("alloc_cache: at most max_cached bytes are kept; the rest is released at once") {
  FakeDevice d; // cap: 1024 bytes
  std::vector<void*> ps;
  for (int i = 0; i < 5; ++i) ps.push_back(d.alloc(256));
  for (void* p : ps) d.cache.free(p);
  CHECK(d.cache.cached_bytes() == 1024);
  CHECK(d.released == 1);
  CHECK(d.live == 1024);
}

TEST_CASE("alloc_cache: out of memory releases the cached blocks and tries once more") {
  FakeDevice d;
  d.limit = 512;
  void* a = d.alloc(256);
  void* b = d.alloc(256);
  d.cache.free(a);
  d.cache.free(b);        // 512 bytes cached, none free on the device
  void* c = d.alloc(300); // 320 bytes: fails, the cache is emptied, the retry succeeds
  CHECK(c != nullptr);
  CHECK(d.released == 2);
  CHECK(d.cache.cached_bytes() == 0);
  // with nothing cached, the device's error reaches the caller
  CHECK_THROWS_AS(d.alloc(300), tg::device_error);
  d.cache.free(c);
}

TEST_CASE("alloc_cache: concurrent allocs and frees from several threads") {
  FakeDevice d;
  std::mutex m; // FakeDevice's own bookkeeping (the cache calls it without its lock)
  tg::AllocCache cache(
      16,
      [&](std::size_t n) {
        std::lock_guard<std::mutex> g(m);
        d.allocated++;
        return ::operator new(n);
      },
      [&](void* p) {
        std::lock_guard<std::mutex> g(m);
        d.released++;
        ::operator delete(p);
      },
      4096);
  std::atomic<int> shared{0}; // blocks that another thread wrote into while this one held them
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&cache, &shared, t] {
      for (int i = 0; i < 2000; ++i) {
        std::size_t n = 16 * std::size_t(1 + (i + t) % 8);
        auto* p = static_cast<unsigned char*>(cache.alloc(n));
        for (std::size_t k = 0; k < n; ++k) p[k] = static_cast<unsigned char>(t);
        for (std::size_t k = 0; k < n; ++k)
          if (p[k] != static_cast<unsigned char>(t)) shared++;
        cache.free(p);
      }
    });
  for (auto& th : threads) th.join();
  CHECK(shared == 0);
  CHECK(cache.cached_bytes() <= 4096);
  std::size_t cached = cache.cached_bytes();
  CHECK(cache.trim() == cached);
  CHECK(d.allocated == d.released);
  CHECK(d.allocated < 4 * 2000); // reuse happened
}
