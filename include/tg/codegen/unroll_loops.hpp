#pragma once
// unroll_loops (C programs for the CPU only, after partition_loops): an innermost loop of a
// register tile (vector multiply-adds) that runs at most 4 times is written out, once per
// iteration with its index a constant. A 3x3 convolution's tile steps through a row of the
// window 3 taps at a time; GCC 12 at -O2 kept that loop of 3 (a fifth of the kernel's time went
// to the loop itself: docs/performance.md). The same operations run in the same order.
#include "partition_loops.hpp"

namespace tg {

/// The pass (see the top of this file): loops of at most `max_trips` iterations, while the
/// copies of a body stay within `max_ops` ops. A program without such a loop comes back as it was.
constexpr Program unroll_loops(const Program& p, std::int64_t max_trips = 4,
                               std::size_t max_ops = 512) {
  const std::size_t n = p.ops.size();
  std::vector<int> end_of(n, -1);
  for (std::size_t i = 0; i < n; ++i)
    if (p.ops[i].kind == UKind::EndRange) end_of[std::size_t(p.ops[i].src[0])] = int(i);
  std::vector<std::int64_t> trips(n, 0);
  bool any = false;
  for (std::size_t r = 0; r < n; ++r) {
    std::int64_t len = 0;
    if (p.ops[r].kind != UKind::Range || !detail::constant_range(p, r, len) || len < 2 ||
        len > max_trips || end_of[r] < 0)
      continue;
    const std::size_t end = std::size_t(end_of[r]);
    bool inner = true, tile = false;
    for (std::size_t i = r + 1; i < end; ++i) {
      const UKind k = p.ops[i].kind;
      inner = inner && k != UKind::Range && k != UKind::Local;
      tile = tile || k == UKind::VecMac || k == UKind::VecDot2;
    }
    if (!inner || !tile || (end - r) * std::size_t(len) > max_ops || !detail::sealed(p, r, end))
      continue;
    trips[r] = len;
    any = true;
  }
  if (!any) return p;

  detail::ProgramRewriter w{p, {}, std::vector<int>(n, -1)};
  for (std::size_t i = 0; i < n; ++i) {
    if (trips[i] == 0) {
      w.map[i] = w.add(w.remapped(p.ops[i]));
      continue;
    }
    const std::size_t end = std::size_t(end_of[i]);
    for (std::int64_t at = 0; at < trips[i]; ++at) {
      w.map[i] = w.cint(at);
      for (std::size_t j = i + 1; j < end; ++j) w.map[j] = w.add(w.remapped(p.ops[j]));
    }
    i = end;
  }
  Program q = p;
  q.ops = std::move(w.out);
  return detail::drop_unused(std::move(q));
}

} // namespace tg
