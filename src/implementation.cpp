// tg's run-time machinery in one translation unit, as a program that uses the single header
// defines it (the CMake build of tg::tg against single_include/).
#define TG_IMPLEMENTATION
#include <tg/tg.hpp>
