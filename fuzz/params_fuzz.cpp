// libFuzzer target: the command line's own parsers (unsigned integers, sizes, --periodic-flush,
// every declared machine parameter, checksum names) and the kernels' size validation. Each must
// accept or throw its documented error; a validated size must give a pool layout without
// wrap-around.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "../src/cli/machine_options.hpp"
#include "../src/cli/strict_numbers.hpp"
#include "pmlab/core/error.hpp"
#include "pmlab/lp/checksum.hpp"
#include "pmlab/pool/pool.hpp"
#include "pmlab/run/catalog.hpp"

namespace {

// Splits the input at '\n' into fields; missing fields are empty.
struct Fields {
  std::string_view rest;
  std::string next() {
    const auto nl = rest.find('\n');
    std::string f(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    return f;
  }
};

template <class F>
void expect_documented_errors(F&& f) {
  try {
    f();
  } catch (const pmlab::Error&) {
  } catch (const CLI::ValidationError&) {
  }
}

std::uint64_t as_u64(const std::string& s) {
  std::uint64_t v = 0;
  for (unsigned char c : s) v = v * 131 + c;  // any bytes -> some number, large ones included
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Fields in{std::string_view(reinterpret_cast<const char*>(data), size)};
  const std::string a = in.next(), b = in.next(), c = in.next(), d = in.next(), e = in.next();

  expect_documented_errors([&] {
    const std::string canon = pmlab::cli::strict_unsigned(a);
    // Accepted text is canonical decimal and round-trips.
    if (pmlab::cli::strict_unsigned(canon) != canon) std::abort();
  });
  expect_documented_errors([&] { (void)pmlab::cli::parse_size("--llc-size", b); });
  expect_documented_errors([&] {
    const auto pf = pmlab::cli::parse_periodic_flush(c);
    if (pf.percent && !(*pf.percent > 0 && *pf.percent <= 100)) std::abort();
  });
  expect_documented_errors([&] { (void)pmlab::lp::checksum_kind_from_string(d); });
  expect_documented_errors([&] {
    pmlab::cli::MachineArgs m;
    m.settings.set("llc-size", b);
    // Any declared machine parameter with any text: parsed and range-checked by its declaration.
    const auto& params = pmlab::sim::machine_params();
    const auto& param = params[as_u64(c) % params.size()];
    if (param.on_command_line()) m.settings.set(param.flag, e);
    m.config = as_u64(d) % 2 == 0 ? "cachegrind" : "lp-isca18";
    if (m.config == "cachegrind") {
      m.ll = e;
      m.d1 = a;
    }
    (void)pmlab::cli::build_machine(m);
  });

  // Run parameters as a kernel would receive them: validated sizes must lay out without wrap.
  const auto& kernels = pmlab::run::kernel_drivers();
  if (kernels.empty()) return 0;
  const auto& k = kernels[as_u64(d) % kernels.size()];
  pmlab::pool::RunParams p;
  p.kernel = k.name;
  p.scheme = k.schemes[as_u64(e) % k.schemes.size()];
  p.n = as_u64(a) % 4 == 0 ? as_u64(a) : as_u64(a) % 70000;
  p.bs = as_u64(b) % 4 == 0 ? as_u64(b) : as_u64(b) % 300;
  p.threads = static_cast<std::uint32_t>(as_u64(c) % 2000);
  // Each of the kernel's own declared parameters, at an arbitrary or a small value.
  for (const auto& spec : k.params)
    p.set_kernel_param(spec.name, as_u64(e) % 3 == 0 ? as_u64(c) : as_u64(e) % 40);
  expect_documented_errors([&] {
    k.validate(p);
    const auto arrays = k.arrays(p);
    const std::uint64_t file = pmlab::pool::pool_file_bytes(arrays);
    std::uint64_t sum = 0;
    for (const auto& arr : arrays) {
      if (arr.bytes > file || sum > file - arr.bytes) std::abort();  // layout wrapped around
      sum += arr.bytes;
    }
  });
  return 0;
}
