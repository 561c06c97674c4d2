// A second translation unit of the consumer that uses tg: the functions tg's headers declare (or,
// header-only, define inline) must link once whichever way the program gets them.
#include <tg/tg.hpp>

float second_sum() { return tg::arange(0, 4).cast(tg::float32).sum().item<float>(); }
