// The definitions of tg/impl/devices.hpp, compiled once into the tg::tg library.
#include <tg/impl/devices.hpp>
