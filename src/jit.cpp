// The definitions of tg/impl/jit.hpp, compiled once into the tg::tg library.
#include <tg/impl/jit.hpp>
