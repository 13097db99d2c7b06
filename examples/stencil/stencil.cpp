// Example: run the 2-D stencil of stencil.hpp natively on a pmlab pool under LP (or base),
// resuming and recovering the run if the pool holds an interrupted one.
//
//   stencil POOL [--scheme lp|base] [--n N] [--bs ROWS] [--steps T] [--threads T]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <pmlab/run/user_kernel.hpp>

#include "stencil.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s POOL [--scheme lp|base] [--n N] [--bs ROWS] [--steps T] "
                 "[--threads T]\n",
                 argv[0]);
    return 2;
  }
  pmlab::pool::RunParams p;
  p.kernel = "stencil";
  p.scheme = "lp";
  p.n = 512;
  p.bs = 16;
  p.set_kernel_param("steps", 20);  // the stencil's own parameter
  p.threads = 2;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string opt = argv[i], val = argv[i + 1];
    const auto num = std::strtoull(val.c_str(), nullptr, 10);
    if (opt == "--scheme")
      p.scheme = val;
    else if (opt == "--n")
      p.n = num;
    else if (opt == "--bs")
      p.bs = num;
    else if (opt == "--steps")
      p.set_kernel_param("steps", num);
    else if (opt == "--threads")
      p.threads = static_cast<std::uint32_t>(num);
    else {
      std::fprintf(stderr, "unknown option %s\n", opt.c_str());
      return 2;
    }
  }
  try {
    pmlab::run::VerifyResult v;
    const auto r = pmlab::run::run_on_pool<stencil::Stencil>(argv[1], p, {}, &v);
    std::printf("stencil --scheme %s n=%llu bs=%llu steps=%llu threads=%u pool=%s\n",
                p.scheme.c_str(), static_cast<unsigned long long>(p.n),
                static_cast<unsigned long long>(p.bs),
                static_cast<unsigned long long>(stencil::steps_of(p)), p.threads, argv[1]);
    if (r.resumed)
      std::printf(
          "  resumed an interrupted run: %s; %llu bands validated, %llu recomputed; "
          "resumed at step %llu\n",
          r.recovery_action.c_str(), static_cast<unsigned long long>(r.recovery.regions_validated),
          static_cast<unsigned long long>(r.recovery.regions_recomputed),
          static_cast<unsigned long long>(r.resume_point));
    else if (!r.recovery_action.empty())
      std::printf("  %s\n", r.recovery_action.c_str());
    std::printf("  compute %.3f s\n", r.compute_seconds);
    std::printf("  verify: %s (%llu elements, %llu differ)\n", v.ok() ? "OK" : "FAILED",
                static_cast<unsigned long long>(v.elements),
                static_cast<unsigned long long>(v.mismatches));
    return v.ok() ? 0 : 1;
  } catch (const pmlab::Error& e) {
    std::fprintf(stderr, "stencil: %s\n", e.what());
    return e.code() == pmlab::ErrorCode::kInvalidArgument ? 2 : 3;
  }
}
