#pragma once
// The allocation cache every device puts in front of its own allocator (host memory, cuMemAlloc,
// Vulkan buffers): freed blocks are kept by rounded size and handed out again, up to a byte cap,
// so repeated realizes of the same shapes reuse memory instead of allocating (and page-faulting
// or synchronizing) afresh.
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "../errors.hpp"

namespace tg {

class AllocCache {
public:
  /// A new block of `bytes` (already rounded); throws device_error when the device is out of
  /// memory. Called without the cache's lock held.
  using Allocate = std::function<void*(std::size_t bytes)>;
  /// Gives a block back to the device (or queues it to be freed once no command uses it).
  using Release = std::function<void(void*)>;

  /// Sizes are rounded up to a multiple of `granule` (at least one granule); at most `max_cached`
  /// bytes of freed blocks are kept.
  AllocCache(std::size_t granule, Allocate allocate, Release release,
             std::size_t max_cached = std::size_t(1) << 30)
      : granule_(granule), max_cached_(max_cached), allocate_(std::move(allocate)),
        release_(std::move(release)) {}
  AllocCache(const AllocCache&) = delete;
  AllocCache& operator=(const AllocCache&) = delete;
  /// Releases the cached blocks (not the ones still in use: their owners free them first).
  ~AllocCache() { trim(); }

  std::size_t round(std::size_t bytes) const {
    return bytes <= granule_ ? granule_ : (bytes + granule_ - 1) / granule_ * granule_;
  }

  /// A block of at least `bytes`: a cached one of the same rounded size, else a new one. When the
  /// device is out of memory, the cached blocks are released and the allocation tried once more.
  void* alloc(std::size_t bytes) {
    std::size_t n = round(bytes);
    {
      std::lock_guard<std::mutex> g(m_);
      if (auto it = free_.find(n); it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= n;
        sizes_[p] = n;
        return p;
      }
    }
    void* p = nullptr;
    try {
      p = allocate_(n);
    } catch (const device_error&) {
      if (trim() == 0) throw;
      p = allocate_(n);
    }
    std::lock_guard<std::mutex> g(m_);
    sizes_[p] = n;
    return p;
  }

  /// Takes back a block from alloc(): kept for reuse while the cache holds at most max_cached
  /// bytes, else released. A pointer that alloc() did not return is ignored.
  void free(void* p) {
    std::lock_guard<std::mutex> g(m_);
    auto it = sizes_.find(p);
    if (it == sizes_.end()) return;
    std::size_t n = it->second;
    sizes_.erase(it);
    if (cached_ + n <= max_cached_) {
      free_[n].push_back(p);
      cached_ += n;
      return;
    }
    release_(p);
  }

  /// Releases every cached block; returns how many bytes they held.
  std::size_t trim() {
    std::lock_guard<std::mutex> g(m_);
    std::size_t bytes = cached_;
    for (auto& [n, blocks] : free_)
      for (void* p : blocks) release_(p);
    free_.clear();
    cached_ = 0;
    return bytes;
  }

  /// Bytes held by freed blocks kept for reuse.
  std::size_t cached_bytes() const {
    std::lock_guard<std::mutex> g(m_);
    return cached_;
  }

private:
  std::size_t granule_, max_cached_;
  Allocate allocate_;
  Release release_;
  mutable std::mutex m_;
  std::map<std::size_t, std::vector<void*>> free_; // rounded size -> freed blocks
  std::map<void*, std::size_t> sizes_;             // blocks in use -> rounded size
  std::size_t cached_ = 0;
};

} // namespace tg
