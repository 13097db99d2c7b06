// pmlab's C API (pmlab/pmlab.h) over lp::Loop: every entry point catches everything, so no
// exception crosses into C or Fortran; failures become a status and the handle's message. A
// handle keeps its first failure (sticky), so that a caller may check only pmlab_loop_run.
#include "pmlab/pmlab.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pmlab/core/error.hpp"
#include "pmlab/lp/loop.hpp"

struct pmlab_loop {
  std::vector<pmlab::lp::LoopArray> arrays;
  std::vector<const double*> inputs;  // per array: the caller's initial values, or null (zeros)
  pmlab::lp::LoopLayout layout;
  bool layout_set = false;
  std::vector<std::byte> params;
  pmlab::lp::LoopOptions options;
  std::optional<pmlab::lp::Loop> loop;
  pmlab::lp::Loop* initializing = nullptr;  // the Loop under construction while init runs
  std::string error;
  int status = PMLAB_OK;  // the first failure; every later call returns it and does nothing
};

namespace {

// A callback's non-zero return, carried through lp::Loop as an exception (never out of here).
struct CallbackFailed {
  std::string what;
};

int status_of(pmlab::ErrorCode c) {
  switch (c) {
    case pmlab::ErrorCode::kInvalidArgument:
      return PMLAB_E_INVALID;
    case pmlab::ErrorCode::kPoolCorrupt:
      return PMLAB_E_CORRUPT;
    case pmlab::ErrorCode::kPoolVersion:
      return PMLAB_E_VERSION;
    case pmlab::ErrorCode::kPoolMismatch:
      return PMLAB_E_MISMATCH;
    case pmlab::ErrorCode::kPoolBusy:
      return PMLAB_E_BUSY;
    case pmlab::ErrorCode::kIo:
      return PMLAB_E_IO;
    case pmlab::ErrorCode::kUnsupported:
      return PMLAB_E_UNSUPPORTED;
    case pmlab::ErrorCode::kInterrupted:
      break;
  }
  return PMLAB_E_INTERNAL;
}

// Runs fn, turning every exception into a status and `error`.
template <class Fn>
int guarded(std::string& error, Fn&& fn) {
  try {
    fn();
    error.clear();
    return PMLAB_OK;
  } catch (const pmlab::Error& e) {
    error = e.what();
    return status_of(e.code());
  } catch (const CallbackFailed& e) {
    error = e.what;
    return PMLAB_E_CALLBACK;
  } catch (const std::exception& e) {
    error = std::string("internal error: ") + e.what();
  } catch (...) {
    error = "internal error: unknown exception";
  }
  return PMLAB_E_INTERNAL;
}

// guarded() on a handle: does nothing once the handle has failed, and remembers a first failure.
template <class Fn>
int sticky(pmlab_loop* loop, Fn&& fn) {
  if (loop->status != PMLAB_OK) return loop->status;
  loop->status = guarded(loop->error, std::forward<Fn>(fn));
  return loop->status;
}

pmlab::Error invalid(const std::string& what) {
  return pmlab::Error(pmlab::ErrorCode::kInvalidArgument, what);
}

std::uint64_t number(const char* key, const char* value) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value, &end, 10);
  if (*value == '\0' || *end != '\0' || *value == '-')
    throw invalid(fmt::format("option {} needs a non-negative integer, got '{}'", key, value));
  return v;
}

void fill(pmlab_report* out, const pmlab::lp::RecoveryStats& s) {
  out->regions_validated = s.regions_validated;
  out->regions_inconsistent = s.regions_inconsistent;
  out->regions_unwritten = s.regions_unwritten;
  out->regions_recomputed = s.regions_recomputed;
}

}  // namespace

extern "C" {

pmlab_loop* pmlab_loop_new(void) {
  return new (std::nothrow) pmlab_loop;
}

void pmlab_loop_free(pmlab_loop* loop) {
  delete loop;
}

int pmlab_loop_add_array(pmlab_loop* loop, const char* name, uint64_t count) {
  return pmlab_loop_add_input(loop, name, count, nullptr);
}

int pmlab_loop_add_input(pmlab_loop* loop, const char* name, uint64_t count,
                         const double* initial) {
  if (loop == nullptr) return PMLAB_E_INVALID;
  return sticky(loop, [&] {
    if (loop->loop) throw invalid("pmlab_loop_add_array after pmlab_loop_open");
    if (name == nullptr) throw invalid("pmlab_loop_add_array: no name");
    loop->arrays.push_back({name, count});
    loop->inputs.push_back(initial);
  });
}

int pmlab_loop_set_layout(pmlab_loop* loop, uint64_t phases, const char* outputs, uint64_t first,
                          uint64_t last, uint64_t chunk) {
  if (loop == nullptr) return PMLAB_E_INVALID;
  return sticky(loop, [&] {
    if (loop->loop) throw invalid("pmlab_loop_set_layout after pmlab_loop_open");
    if (outputs == nullptr) throw invalid("pmlab_loop_set_layout: no outputs");
    pmlab::lp::LoopLayout l{
        .phases = phases, .outputs = {}, .first = first, .last = last, .chunk = chunk};
    std::string_view rest(outputs);
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      std::string_view name = rest.substr(0, comma);
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
      l.outputs.emplace_back(name);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    loop->layout = std::move(l);
    loop->layout_set = true;
  });
}

int pmlab_loop_set_params(pmlab_loop* loop, const void* params, size_t bytes) {
  if (loop == nullptr) return PMLAB_E_INVALID;
  return sticky(loop, [&] {
    if (loop->loop) throw invalid("pmlab_loop_set_params after pmlab_loop_open");
    if (params == nullptr && bytes != 0) throw invalid("pmlab_loop_set_params: no parameters");
    const auto* p = static_cast<const std::byte*>(params);
    loop->params.assign(p, p + bytes);
  });
}

int pmlab_loop_set_option(pmlab_loop* loop, const char* key, const char* value) {
  if (loop == nullptr) return PMLAB_E_INVALID;
  return sticky(loop, [&] {
    if (key == nullptr || value == nullptr) throw invalid("pmlab_loop_set_option: no key or value");
    const std::string_view k(key);
    auto& o = loop->options;
    if (k == "name")
      o.name = value;
    else if (k == "threads")
      o.threads = static_cast<unsigned>(number(key, value));
    else if (k == "persistence")
      o.persistence = pmlab::persist::persistence_from_string(value);
    else if (k == "checksum")
      o.checksum = pmlab::lp::checksum_kind_from_string(value);
    else if (k == "warn")
      o.warn_if_emulated = number(key, value) != 0;
    else
      throw invalid(fmt::format(
          "unknown option '{}' (expected name, threads, persistence, checksum or warn)", key));
  });
}

int pmlab_loop_open(pmlab_loop* loop, const char* path, pmlab_init_fn init, void* user) {
  if (loop == nullptr) return PMLAB_E_INVALID;
  return sticky(loop, [&] {
    if (loop->loop) throw invalid("pmlab_loop_open: the loop is open already");
    if (path == nullptr) throw invalid("pmlab_loop_open: no path");
    if (!loop->layout_set) throw invalid("pmlab_loop_open before pmlab_loop_set_layout");
    // A run without parameters stores one zero byte, so that every loop pool holds some.
    if (loop->params.empty()) loop->params.push_back(std::byte{0});
    // A created pool's arrays: the callers' initial values copied, then init (if any) run.
    const pmlab::lp::Loop::Init on_create = [loop, init, user](pmlab::lp::Loop& l) {
      for (std::size_t i = 0; i < loop->arrays.size(); ++i)
        if (loop->inputs[i] != nullptr)
          std::memcpy(l.array(loop->arrays[i].name), loop->inputs[i],
                      loop->arrays[i].count * sizeof(double));
      if (init == nullptr) return;
      loop->initializing = &l;
      const int rc = init(user, loop);
      loop->initializing = nullptr;
      if (rc != 0) throw CallbackFailed{fmt::format("the init callback returned {}", rc)};
    };
    loop->loop.emplace(path, loop->params.data(), loop->params.size(), loop->arrays, loop->layout,
                       on_create, loop->options);
  });
}

double* pmlab_loop_array(pmlab_loop* loop, const char* name) {
  if (loop == nullptr) return nullptr;
  double* p = nullptr;
  sticky(loop, [&] {
    if (name == nullptr) throw invalid("pmlab_loop_array: no name");
    const pmlab::lp::Loop* l = loop->initializing != nullptr ? loop->initializing
                               : loop->loop                  ? &*loop->loop
                                                             : nullptr;
    if (l == nullptr) throw invalid("pmlab_loop_array before pmlab_loop_open");
    p = l->array(name);
  });
  return p;
}

int pmlab_loop_run(pmlab_loop* loop, pmlab_body_fn body, void* user, pmlab_report* report) {
  if (loop == nullptr) return PMLAB_E_INVALID;
  return sticky(loop, [&] {
    if (!loop->loop) throw invalid("pmlab_loop_run before pmlab_loop_open");
    if (body == nullptr) throw invalid("pmlab_loop_run: no body");
    const auto r = loop->loop->run([body, user](std::uint64_t t, std::uint64_t k) {
      if (const int rc = body(user, t, k); rc != 0)
        throw CallbackFailed{
            fmt::format("the body returned {} for phase {}, region {}; the pool stays running "
                        "and the next run recovers",
                        rc, t, k)};
    });
    if (report != nullptr) {
      *report = pmlab_report{};
      report->created = r.created;
      report->resumed = r.resumed;
      report->already_done = r.already_done;
      report->resume_phase = r.resume_phase;
      report->crash_points = r.crash_points;
      fill(report, r.recovery);
    }
  });
}

uint64_t pmlab_loop_regions(const pmlab_loop* loop) {
  return loop != nullptr && loop->loop ? loop->loop->regions() : 0;
}

const char* pmlab_loop_error(const pmlab_loop* loop) {
  return loop == nullptr ? "no loop (NULL handle)" : loop->error.c_str();
}

const char* pmlab_strerror(int status) {
  switch (status) {
    case PMLAB_OK:
      return "PMLAB_OK";
    case PMLAB_E_INVALID:
      return "PMLAB_E_INVALID";
    case PMLAB_E_CORRUPT:
      return "PMLAB_E_CORRUPT";
    case PMLAB_E_VERSION:
      return "PMLAB_E_VERSION";
    case PMLAB_E_MISMATCH:
      return "PMLAB_E_MISMATCH";
    case PMLAB_E_BUSY:
      return "PMLAB_E_BUSY";
    case PMLAB_E_IO:
      return "PMLAB_E_IO";
    case PMLAB_E_UNSUPPORTED:
      return "PMLAB_E_UNSUPPORTED";
    case PMLAB_E_CALLBACK:
      return "PMLAB_E_CALLBACK";
    case PMLAB_E_INTERNAL:
      return "PMLAB_E_INTERNAL";
    default:
      return "PMLAB_E_UNKNOWN";
  }
}

int pmlab_loop_check(const char* path, int32_t* state, uint64_t* durable_phases,
                     pmlab_report* report, char* message, size_t message_bytes) {
  std::string error;
  const int rc = guarded(error, [&] {
    if (path == nullptr) throw invalid("pmlab_loop_check: no path");
    const auto c = pmlab::lp::check_loop_pool(path);
    if (state != nullptr) *state = static_cast<int32_t>(c.state);
    if (durable_phases != nullptr) *durable_phases = c.durable_phases;
    if (report != nullptr) {
      *report = pmlab_report{};
      fill(report, c.recovery);
    }
  });
  if (message != nullptr && message_bytes != 0) {
    const std::size_t n = std::min(error.size(), message_bytes - 1);
    std::memcpy(message, error.data(), n);
    message[n] = '\0';
  }
  return rc;
}

}  // extern "C"
