#pragma once
// PyTorch's print options, which every tensor prints with (util/print.hpp prints).
#include <cstdint>
#include <optional>

namespace tg {

/// PyTorch's print options (torch.set_printoptions), with its defaults.
struct PrintOptions {
  int precision = 4;             ///< digits after the point
  std::int64_t threshold = 1000; ///< more elements than this are summarized
  std::int64_t edgeitems = 3;    ///< items kept at each end of a summarized dim (at least 1)
  int linewidth = 80;            ///< characters per line
  std::optional<bool>
      sci_mode; ///< scientific notation always (true) or never (false); unset: chosen
};
/// The options every tensor prints with.
inline PrintOptions& print_options() {
  static PrintOptions o;
  return o;
}
inline void set_printoptions(const PrintOptions& o) { print_options() = o; }

} // namespace tg
