#pragma once
// tg::Rc: the reference-counted pointer that tensors, buffers and devices are held by (what
// libtorch's c10::intrusive_ptr is to its tensors). It has std::shared_ptr's semantics for what
// tg uses — shared ownership, thread-safe counts, conversion to a base or const, weak references,
// make_rc as make_shared — and exists because <memory> costs every translation unit that includes
// tg.hpp about 0.2 s with Clang (libstdc++ 12 includes <ostream> there in C++20).
//
// An Rc adopts a std::shared_ptr (or any pointer-like with get() and element_type) implicitly, so
// code that makes devices or schedulers with std::make_shared passes them on unchanged.
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#endif

namespace tg {

namespace detail {

/// True while the process has one thread (glibc's flag, which libstdc++'s shared_ptr reads too):
/// the counts need no atomic instruction then, which a small graph's building feels
/// (docs/performance.md).
inline bool rc_single_threaded() noexcept {
#if __has_include(<sys/single_threaded.h>)
  return __libc_single_threaded;
#else
  return false;
#endif
}

/// The counts shared by an object's Rcs and WeakRcs, in one word: the strong count in the low
/// half, and in the high half the weak references plus one for all the strong ones together. The
/// object is destroyed when the strong count reaches zero, the block when the high half does.
/// One word lets the last owner with no weak reference free both after a load (as libstdc++).
struct RcBlock {
  using Word = unsigned long long;
  static constexpr Word kStrong = 1, kWeak = Word(1) << 32, kStrongMask = kWeak - 1;
  Word counts = kStrong + kWeak;
  virtual ~RcBlock() = default;
  /// Destroys the object (the strong count reached zero).
  virtual void dispose() noexcept = 0;

  /// counts += d; the old value.
  Word fetch_add(Word d) noexcept {
    if (rc_single_threaded()) return std::exchange(counts, counts + d);
    return __atomic_fetch_add(&counts, d, __ATOMIC_ACQ_REL);
  }
  void retain() noexcept {
    if (rc_single_threaded())
      counts += kStrong;
    else
      __atomic_fetch_add(&counts, kStrong, __ATOMIC_RELAXED);
  }
  void release() noexcept {
    // alone: no other owner can copy it and no weak reference can lock it
    if (__atomic_load_n(&counts, __ATOMIC_ACQUIRE) == kStrong + kWeak)
      destroy();
    else if ((fetch_add(Word(0) - kStrong) & kStrongMask) == 1)
      last_release();
  }
  // out of line, so that release() is small enough to inline everywhere
  [[gnu::noinline]] void destroy() noexcept {
    dispose();
    delete this;
  }
  [[gnu::noinline]] void last_release() noexcept {
    dispose();
    weak_release();
  }
  void weak_retain() noexcept { fetch_add(kWeak); }
  void weak_release() noexcept {
    if (fetch_add(Word(0) - kWeak) == kWeak) delete this;
  }
  /// A strong reference from a weak one, unless the object is gone.
  bool try_retain() noexcept {
    Word c = __atomic_load_n(&counts, __ATOMIC_RELAXED);
    while ((c & kStrongMask) != 0) {
      if (rc_single_threaded()) {
        counts = c + kStrong;
        return true;
      }
      if (__atomic_compare_exchange_n(&counts, &c, c + kStrong, true, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED))
        return true;
    }
    return false;
  }
  long count() const noexcept {
    return long(__atomic_load_n(&counts, __ATOMIC_RELAXED) & kStrongMask);
  }
};

/// The object in the block (make_rc: one allocation).
template <class T> struct RcInline final : RcBlock {
  alignas(T) unsigned char storage[sizeof(T)];
  T* get() noexcept { return std::launder(reinterpret_cast<T*>(storage)); }
  void dispose() noexcept override { get()->~T(); }
};
/// An object allocated with new.
template <class T> struct RcOwned final : RcBlock {
  T* p;
  explicit RcOwned(T* q) : p(q) {}
  void dispose() noexcept override { delete p; }
};
/// Another owner (a std::shared_ptr), kept until the last Rc goes.
template <class P> struct RcAdopted final : RcBlock {
  P p;
  explicit RcAdopted(P q) : p(std::move(q)) {}
  void dispose() noexcept override { p = P(); }
};

} // namespace detail

template <class T> class Rc;
template <class T> class WeakRc;

namespace detail {
template <class P> inline constexpr bool is_rc = false;
template <class U> inline constexpr bool is_rc<Rc<U>> = true;
/// Another owner's pointer to a T (a std::shared_ptr<U>), which an Rc<T> can share.
template <class P, class T>
concept adoptable_pointer =
    !is_rc<P> && std::is_convertible_v<decltype(std::declval<const P&>().get()), T*>;
} // namespace detail

template <class T> class Rc {
public:
  using element_type = T;

  constexpr Rc() noexcept = default;
  constexpr Rc(std::nullptr_t) noexcept {} // NOLINT: converts like std::shared_ptr
  /// Owns `p`, allocated with new.
  template <class U, std::enable_if_t<std::is_convertible_v<U*, T*>, int> = 0>
  explicit Rc(U* p) : p_(p) {
    try {
      if (p) b_ = new detail::RcOwned<U>(p);
    } catch (...) {
      delete p;
      throw;
    }
  }
  /// Shares what another owner (a std::shared_ptr) owns, which it keeps until the last Rc goes.
  template <class P,
            std::enable_if_t<detail::adoptable_pointer<std::remove_cvref_t<P>, T>, int> = 0>
  Rc(P&& other) // NOLINT: converts like std::shared_ptr from std::unique_ptr
      : p_(other.get()) {
    if (p_) b_ = new detail::RcAdopted<std::remove_cvref_t<P>>(std::forward<P>(other));
  }
  Rc(const Rc& o) noexcept : p_(o.p_), b_(o.b_) {
    if (b_) b_->retain();
  }
  Rc(Rc&& o) noexcept : p_(std::exchange(o.p_, nullptr)), b_(std::exchange(o.b_, nullptr)) {}
  template <class U, std::enable_if_t<std::is_convertible_v<U*, T*>, int> = 0>
  Rc(const Rc<U>& o) noexcept : p_(o.p_), b_(o.b_) { // NOLINT: converts to a base
    if (b_) b_->retain();
  }
  template <class U, std::enable_if_t<std::is_convertible_v<U*, T*>, int> = 0>
  Rc(Rc<U>&& o) noexcept // NOLINT: converts to a base
      : p_(std::exchange(o.p_, nullptr)), b_(std::exchange(o.b_, nullptr)) {}
  /// Shares `o`'s object but points at `p` (std::shared_ptr's aliasing constructor).
  template <class U> Rc(const Rc<U>& o, T* p) noexcept : p_(p), b_(o.b_) {
    if (b_) b_->retain();
  }
  ~Rc() {
    if (b_) b_->release();
  }
  Rc& operator=(Rc o) noexcept {
    std::swap(p_, o.p_);
    std::swap(b_, o.b_);
    return *this;
  }
  void reset() noexcept { Rc().swap(*this); }
  void swap(Rc& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(b_, o.b_);
  }

  T* get() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  T* operator->() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  /// How many Rcs share the object (0 when empty).
  long use_count() const noexcept { return b_ ? b_->count() : 0; }

  template <class U> bool operator==(const Rc<U>& o) const noexcept { return p_ == o.get(); }
  bool operator==(std::nullptr_t) const noexcept { return p_ == nullptr; }

private:
  template <class U> friend class Rc;
  template <class U> friend class WeakRc;
  template <class U, class... A> friend Rc<U> make_rc(A&&... args);
  Rc(T* p, detail::RcBlock* b) noexcept : p_(p), b_(b) {}

  T* p_ = nullptr;
  detail::RcBlock* b_ = nullptr;
};

/// A new T shared by Rcs, allocated with its counts (std::make_shared).
template <class T, class... A> Rc<T> make_rc(A&&... args) {
  auto* b = new detail::RcInline<T>;
  try {
    ::new (static_cast<void*>(b->storage)) T(std::forward<A>(args)...);
  } catch (...) {
    delete b;
    throw;
  }
  return Rc<T>(b->get(), b);
}

/// std::dynamic_pointer_cast for Rc.
template <class T, class U> Rc<T> dynamic_pointer_cast(const Rc<U>& r) noexcept {
  if (T* p = dynamic_cast<T*>(r.get())) return Rc<T>(r, p);
  return nullptr;
}
/// std::static_pointer_cast for Rc.
template <class T, class U> Rc<T> static_pointer_cast(const Rc<U>& r) noexcept {
  return Rc<T>(r, static_cast<T*>(r.get()));
}

/// A reference that does not keep the object alive (std::weak_ptr).
template <class T> class WeakRc {
public:
  constexpr WeakRc() noexcept = default;
  WeakRc(const Rc<T>& r) noexcept : p_(r.p_), b_(r.b_) { // NOLINT: converts like std::weak_ptr
    if (b_) b_->weak_retain();
  }
  WeakRc(const WeakRc& o) noexcept : p_(o.p_), b_(o.b_) {
    if (b_) b_->weak_retain();
  }
  WeakRc(WeakRc&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), b_(std::exchange(o.b_, nullptr)) {}
  ~WeakRc() {
    if (b_) b_->weak_release();
  }
  WeakRc& operator=(WeakRc o) noexcept {
    std::swap(p_, o.p_);
    std::swap(b_, o.b_);
    return *this;
  }
  /// The object, or an empty Rc once it is gone.
  Rc<T> lock() const noexcept {
    if (b_ && b_->try_retain()) return Rc<T>(p_, b_);
    return nullptr;
  }
  bool expired() const noexcept { return !b_ || b_->count() == 0; }

private:
  T* p_ = nullptr;
  detail::RcBlock* b_ = nullptr;
};

} // namespace tg
