// The definitions of tg/impl/autograd.hpp, compiled once into the tg::tg library.
#include <tg/impl/autograd.hpp>
