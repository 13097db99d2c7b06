// OpenBLAS and BLIS as gemm's rivals in pmlab bench: each library's cblas_dgemm, loaded at run
// time from the file CMake found (dlopen, RTLD_LOCAL: both export cblas_dgemm, so one executable
// linking both would call one library for both rows).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pmlab::experiments {

/// The largest normwise relative difference a rival's C may have from base's: the libraries
/// sum each element in their own order (blocks of k added separately), so their bits differ.
inline constexpr double kRivalTolerance = 1e-12;

/// One BLAS library's dgemm, ready to call.
struct BlasRival {
  std::string name;       ///< "openblas" or "blis"
  std::string path;       ///< the shared library it was loaded from
  std::string kernel;     ///< the kernel it chose for this CPU (OpenBLAS's core name, BLIS's arch)
  void* dgemm = nullptr;  ///< cblas_dgemm
  void* set_threads = nullptr;  ///< openblas_set_num_threads / bli_thread_set_num_threads
  /// C = A·B for n x n row-major matrices (beta = 0) on `threads` threads.
  void multiply(std::size_t n, const double* a, const double* b, double* c, int threads) const;
};

/// The rivals this build knows (CMake found their libraries), in a fixed order.
[[nodiscard]] std::vector<std::string> blas_rival_names();
/// Loads rival `name` once per process. Throws pmlab::Error(kUnsupported) when this build found
/// no such library or it does not load, kInvalidArgument for a name no build knows.
[[nodiscard]] const BlasRival& blas_rival(const std::string& name);

/// max |x - y| / max |y| over two results of one product (normwise relative difference).
[[nodiscard]] double max_relative_difference(const double* x, const double* y, std::size_t count);

}  // namespace pmlab::experiments
