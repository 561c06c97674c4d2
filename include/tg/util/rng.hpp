#pragma once
// The generator of tg's host-side random numbers (rand, randn, init, dropout's seeds), seeded by
// tg::manual_seed; defined in tg/impl/tensor/class.hpp.
#include <random>

#include "../config.hpp"

namespace tg::detail {
TG_API std::mt19937_64& rng();
} // namespace tg::detail
