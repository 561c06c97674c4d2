// The definitions of tg/impl/tensor/, compiled once into the tg::tg library.
#include <tg/impl/tensor/class.hpp>
#include <tg/impl/tensor/core.hpp>
#include <tg/impl/tensor/creation.hpp>
#include <tg/impl/tensor/indexing.hpp>
#include <tg/impl/tensor/math.hpp>
#include <tg/impl/tensor/movement.hpp>
#include <tg/impl/tensor/ops.hpp>
#include <tg/impl/tensor/print.hpp>
