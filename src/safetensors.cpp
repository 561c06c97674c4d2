// The definitions of tg/impl/safetensors.hpp, compiled once into the tg::tg library.
#include <tg/impl/safetensors.hpp>
#include <tg/impl/state_dict.hpp>
