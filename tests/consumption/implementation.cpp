// The consumer's source file that defines tg's run-time machinery (the plain compiler line in
// split mode: one file defines TG_IMPLEMENTATION before including <tg/tg.hpp>).
#define TG_IMPLEMENTATION
#include <tg/tg.hpp>
