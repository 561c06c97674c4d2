// The definitions of tg/impl/distributed.hpp, compiled once into the tg::tg library.
#include <tg/impl/distributed.hpp>
