#pragma once
// The MPI library tg::distributed's "mpi" backend calls, opened with dlopen on first use, as the
// CUDA runtime opens the driver: a program that includes <tg/distributed.hpp> links nothing from
// MPI and builds without MPI's headers.
//
// MPI fixes its C API but not its ABI. tg speaks Open MPI's (libmpi.so.40: Open MPI 3.x to 5.x),
// the MPI of Debian, Ubuntu, Fedora and most clusters' module systems: its handles (communicator,
// datatype, reduction, request) are pointers, and the predefined ones are the addresses of
// exported objects (ompi_mpi_comm_world, ompi_mpi_float, ompi_mpi_op_sum, ...). MPICH and its
// derivatives (Intel MPI, Cray MPICH) use integer handles: such a library is refused by name, with
// that reason. The declarations below are tg's own, from the MPI standard's C signatures.
#include <dlfcn.h>

#include <string>

#include "../graph/dtype.hpp"
#include "../runtime/env.hpp"

namespace tg::distributed::detail {

using Handle = void*; // MPI_Comm, MPI_Datatype, MPI_Op, MPI_Request, MPI_Errhandler: pointers
using UserFn = void (*)(void* in, void* inout, int* len, Handle* datatype);

/// libmpi's entry points and predefined handles. One instance, loaded on first use.
struct Mpi {
  std::string path, error; // what was opened, or why nothing could be
  void* lib = nullptr;

  int (*Initialized)(int*) = nullptr;
  int (*Finalized)(int*) = nullptr;
  int (*Init_thread)(int*, char***, int, int*) = nullptr;
  int (*Finalize)() = nullptr;
  int (*Abort)(Handle, int) = nullptr;
  int (*Comm_rank)(Handle, int*) = nullptr;
  int (*Comm_size)(Handle, int*) = nullptr;
  int (*Comm_dup)(Handle, Handle*) = nullptr;
  int (*Comm_free)(Handle*) = nullptr;
  int (*Comm_set_errhandler)(Handle, Handle) = nullptr;
  int (*Error_string)(int, char*, int*) = nullptr;
  int (*Op_create)(UserFn, int, Handle*) = nullptr;
  // non-blocking calls for the checks and barrier, which poll against the timeout
  int (*Ibarrier)(Handle, Handle*) = nullptr;
  int (*Iallgather)(const void*, int, Handle, void*, int, Handle, Handle, Handle*) = nullptr;
  int (*Isend)(const void*, int, Handle, int, int, Handle, Handle*) = nullptr;
  int (*Irecv)(void*, int, Handle, int, int, Handle, Handle*) = nullptr;
  int (*Test)(Handle*, int*, void*) = nullptr;
  // the blocking calls move the data: Open MPI's non-blocking collectives (libnbc) take other,
  // slower algorithms (0.7-0.8 of MPI_Allreduce's bandwidth at 1-16 MiB on 2 ranks)
  int (*Allreduce)(const void*, void*, int, Handle, Handle, Handle) = nullptr;
  int (*Bcast)(void*, int, Handle, int, Handle) = nullptr;
  int (*Allgather)(const void*, int, Handle, void*, int, Handle, Handle) = nullptr;
  int (*Reduce_scatter_block)(const void*, void*, int, Handle, Handle, Handle) = nullptr;
  int (*Send)(const void*, int, Handle, int, int, Handle) = nullptr;
  int (*Recv)(void*, int, Handle, int, int, Handle, void*) = nullptr;

  Handle comm_world = nullptr, errors_return = nullptr;
  Handle op_sum = nullptr, op_max = nullptr, op_min = nullptr, op_prod = nullptr;
  Handle op_lor = nullptr, op_land = nullptr;
  Handle types[dtype_count] = {}; // per DType (16-bit floats as uint16, with ops of tg's own)

  bool ok() const { return error.empty(); }
  std::string describe(int code) const {
    char text[512];
    int len = 0;
    if (Error_string && Error_string(code, text, &len) == 0)
      return std::string(text, std::size_t(len));
    return "MPI error " + std::to_string(code);
  }
};

inline Mpi load_mpi() {
  Mpi m;
  const std::string wanted = env::get("TG_LIBMPI");
  for (const char* name : {"libmpi.so.40", "libmpi.so"}) {
    const std::string candidate = wanted.empty() ? name : wanted;
    // RTLD_GLOBAL: Open MPI's components (themselves dlopened) resolve libmpi's symbols
    if ((m.lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL))) {
      m.path = candidate;
      break;
    }
    if (!wanted.empty()) break;
  }
  if (!m.lib) {
    m.error = wanted.empty() ? "no MPI library (libmpi.so.40) could be opened: install Open MPI "
                               "(Debian: openmpi-bin libopenmpi3) or name it in TG_LIBMPI"
                             : "TG_LIBMPI=" + wanted + " could not be opened: " + dlerror();
    return m;
  }
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(m.lib, name));
    if (!fn && m.error.empty()) m.error = m.path + " lacks " + name;
  };
  auto object = [&](const char* name) -> Handle {
    Handle h = dlsym(m.lib, name);
    if (!h && m.error.empty()) m.error = m.path + " lacks " + name;
    return h;
  };
  if (!dlsym(m.lib, "ompi_mpi_comm_world")) {
    m.error = m.path +
              " is not Open MPI (it has no ompi_mpi_comm_world): tg's mpi backend speaks Open "
              "MPI's ABI (libmpi.so.40); MPICH-family libraries are not supported";
    return m;
  }
  get(m.Initialized, "MPI_Initialized");
  get(m.Finalized, "MPI_Finalized");
  get(m.Init_thread, "MPI_Init_thread");
  get(m.Finalize, "MPI_Finalize");
  get(m.Abort, "MPI_Abort");
  get(m.Comm_rank, "MPI_Comm_rank");
  get(m.Comm_size, "MPI_Comm_size");
  get(m.Comm_dup, "MPI_Comm_dup");
  get(m.Comm_free, "MPI_Comm_free");
  get(m.Comm_set_errhandler, "MPI_Comm_set_errhandler");
  get(m.Error_string, "MPI_Error_string");
  get(m.Op_create, "MPI_Op_create");
  get(m.Ibarrier, "MPI_Ibarrier");
  get(m.Iallgather, "MPI_Iallgather");
  get(m.Isend, "MPI_Isend");
  get(m.Irecv, "MPI_Irecv");
  get(m.Test, "MPI_Test");
  get(m.Allreduce, "MPI_Allreduce");
  get(m.Bcast, "MPI_Bcast");
  get(m.Allgather, "MPI_Allgather");
  get(m.Reduce_scatter_block, "MPI_Reduce_scatter_block");
  get(m.Send, "MPI_Send");
  get(m.Recv, "MPI_Recv");
  m.comm_world = object("ompi_mpi_comm_world");
  m.errors_return = object("ompi_mpi_errors_return");
  m.op_sum = object("ompi_mpi_op_sum");
  m.op_max = object("ompi_mpi_op_max");
  m.op_min = object("ompi_mpi_op_min");
  m.op_prod = object("ompi_mpi_op_prod");
  m.op_lor = object("ompi_mpi_op_lor");
  m.op_land = object("ompi_mpi_op_land");
  const char* type_names[dtype_count] = {
      "ompi_mpi_uint8_t",  "ompi_mpi_int8_t",   "ompi_mpi_int16_t",  "ompi_mpi_int32_t",
      "ompi_mpi_int64_t",  "ompi_mpi_uint8_t",  "ompi_mpi_uint16_t", "ompi_mpi_uint32_t",
      "ompi_mpi_uint64_t", "ompi_mpi_uint16_t", "ompi_mpi_uint16_t", "ompi_mpi_float",
      "ompi_mpi_double"};
  for (int t = 0; t < dtype_count; ++t) m.types[t] = object(type_names[t]);
  return m;
}

/// The MPI library, loaded once.
inline Mpi& mpi() {
  static Mpi m = load_mpi();
  return m;
}

// MPI thread levels (the standard's order; Open MPI's values).
inline constexpr int kThreadSerialized = 2;

} // namespace tg::distributed::detail
