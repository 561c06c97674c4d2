#pragma once
// The errors tg throws. Each names the op and, for user mistakes, the user's call site.
#include <source_location>
#include <stdexcept>
#include <string>

#include "config.hpp"

namespace tg {

struct error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Incompatible or invalid shapes, axes, reshapes or slices.
struct shape_error : error {
  using error::error;
};
/// A dtype an op does not accept, or two dtypes it cannot combine.
struct dtype_error : error {
  using error::error;
};
/// An index out of range (item(), gather indices checked on the host).
struct index_error : error {
  using error::error;
};
/// A device that is unavailable, or an operation across devices.
struct device_error : error {
  using error::error;
};
/// A model or method that cannot be exported as asked (tg::export_model): the method, the input
/// or op, and the user's call site.
struct export_error : error {
  using error::error;
};
/// A kernel that did not compile: the compiler's message and the source.
struct compile_error : error {
  compile_error(const std::string& message, std::string source_, std::string log_)
      : error(message), source(std::move(source_)), log(std::move(log_)) {}
  std::string source, log;
};

namespace detail {
/// " (at file:line in function)", as errors end (tg/impl/tensor/class.hpp).
TG_API std::string where(const std::source_location& loc);
template <class E>
[[noreturn]] void fail(const std::string& op, const std::string& msg,
                       const std::source_location& loc) {
  throw E("tg." + op + ": " + msg + where(loc));
}
} // namespace detail

} // namespace tg
