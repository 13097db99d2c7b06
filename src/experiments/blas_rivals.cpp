// Loads OpenBLAS's and BLIS's cblas_dgemm with dlopen from the paths CMake found, and asks each
// which kernel it runs on this CPU.
#include "pmlab/experiments/blas_rivals.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"

namespace pmlab::experiments {
namespace {

// CBLAS's enumerations (cblas.h), which both libraries use: row-major, no transposition.
constexpr int kCblasRowMajor = 101;
constexpr int kCblasNoTrans = 111;
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                         int, double, double*, int);
using SetThreadsFn = void (*)(int);
using NameFn = char* (*)();
using BlisArchIdFn = int (*)();
using BlisArchStringFn = const char* (*)(int);

// The library files CMake's find_library located (empty: not found, the row is unavailable).
#ifdef PMLAB_OPENBLAS_LIBRARY
constexpr const char* kOpenBlasPath = PMLAB_OPENBLAS_LIBRARY;
#else
constexpr const char* kOpenBlasPath = "";
#endif
#ifdef PMLAB_BLIS_LIBRARY
constexpr const char* kBlisPath = PMLAB_BLIS_LIBRARY;
#else
constexpr const char* kBlisPath = "";
#endif

const char* blas_library_path(const std::string& name) {
  if (name == "openblas") return kOpenBlasPath;
  if (name == "blis") return kBlisPath;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown BLAS rival '{}' (known: openblas, blis)", name));
}

BlasRival load_blas_rival(const std::string& name) {
  const std::string path = blas_library_path(name);
  if (path.empty())
    throw Error(ErrorCode::kUnsupported,
                fmt::format("this build found no {} library (install it with scripts/setup-deps "
                            "and reconfigure)",
                            name));
  // RTLD_LOCAL keeps each library's cblas_dgemm to its own handle; never closed, as the
  // libraries' thread pools outlive any one call.
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr)
    throw Error(ErrorCode::kUnsupported, fmt::format("cannot load {}: {}", path, ::dlerror()));
  BlasRival r;
  r.name = name;
  r.path = path;
  r.dgemm = ::dlsym(h, "cblas_dgemm");
  if (r.dgemm == nullptr)
    throw Error(ErrorCode::kUnsupported, fmt::format("{} has no cblas_dgemm", path));
  if (name == "openblas") {
    r.set_threads = ::dlsym(h, "openblas_set_num_threads");
    if (auto core = reinterpret_cast<NameFn>(::dlsym(h, "openblas_get_corename")))
      r.kernel = core();
  } else {
    r.set_threads = ::dlsym(h, "bli_thread_set_num_threads");
    auto id = reinterpret_cast<BlisArchIdFn>(::dlsym(h, "bli_arch_query_id"));
    auto str = reinterpret_cast<BlisArchStringFn>(::dlsym(h, "bli_arch_string"));
    if (id != nullptr && str != nullptr) r.kernel = str(id());
  }
  if (r.kernel.empty()) r.kernel = "unknown";
  return r;
}

}  // namespace

void BlasRival::multiply(std::size_t n, const double* a, const double* b, double* c,
                         int threads) const {
  if (set_threads != nullptr) reinterpret_cast<SetThreadsFn>(set_threads)(threads);
  const int ni = static_cast<int>(n);
  reinterpret_cast<DgemmFn>(dgemm)(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, ni, ni, ni, 1.0, a,
                                   ni, b, ni, 0.0, c, ni);
}

std::vector<std::string> blas_rival_names() {
  std::vector<std::string> names;
  if (*kOpenBlasPath != '\0') names.emplace_back("openblas");
  if (*kBlisPath != '\0') names.emplace_back("blis");
  return names;
}

const BlasRival& blas_rival(const std::string& name) {
  static std::mutex m;
  static std::map<std::string, BlasRival> loaded;
  const std::lock_guard lock(m);
  auto it = loaded.find(name);
  if (it == loaded.end()) it = loaded.emplace(name, load_blas_rival(name)).first;
  return it->second;
}

double max_relative_difference(const double* x, const double* y, std::size_t count) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < count; ++i) {
    diff = std::max(diff, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace pmlab::experiments
