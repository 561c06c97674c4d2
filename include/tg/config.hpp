#pragma once
// How this translation unit gets tg's run-time machinery (lowering, passes, renderers, device
// runtimes, realize, jit, autograd's engine, safetensors, printing). docs/cmake.md has the whole
// story; in short, exactly one of:
// - nothing defined (the default): the headers declare the machinery and the program links it
//   once, from the CMake target tg::tg or from one source file that defines TG_IMPLEMENTATION;
// - TG_IMPLEMENTATION, defined before including <tg/tg.hpp> in one source file: that file
//   defines the machinery for the whole program (the single-header drop-in);
// - TG_HEADER_ONLY, defined in every source file (the CMake target tg::header_only): every
//   file defines it all, inline, as one-file scripts like (and pays for in compile time).
// A program uses one way throughout.
#if defined(TG_HEADER_ONLY) || defined(TG_IMPLEMENTATION)
#define TG_DEFINITIONS 1
#else
#define TG_DEFINITIONS 0
#endif

// Declares and defines the functions the headers declare and tg/impl/ defines: inline in the
// header-only mode, one external definition otherwise.
#ifdef TG_HEADER_ONLY
#define TG_API inline
#else
#define TG_API
#endif
