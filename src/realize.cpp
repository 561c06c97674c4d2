// The definitions of tg/impl/realize.hpp, compiled once into the tg::tg library.
#include <tg/impl/realize.hpp>
