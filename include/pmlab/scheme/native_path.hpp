// Traits telling scheme blocks when a native-only fast path (non-temporal stores) is allowed.
#pragma once

#include "pmlab/mem/native_backend.hpp"
#include "pmlab/persist/persister.hpp"

namespace pmlab::scheme {

// True only for the native backend. Any other backend (the simulator, test backends) must see
// every store, flush and fence, so blocks fall back to element stores through it there.
template <class B>
inline constexpr bool kIsNativeBackend = false;
template <persist::Persister P>
inline constexpr bool kIsNativeBackend<mem::NativeBackend<P>> = true;

// How non-temporal stores become durable under a persister: with the CPU persisters an sfence
// suffices (NT stores bypass the caches and reach the ADR domain in order with the fence);
// NoPersist needs nothing; under libpmem2's choice (msync on plain files) the range must still
// be handed to its persist function.
template <class P>
inline constexpr bool kNtNeedsPersistCall = true;
template <persist::FlushKind K>
inline constexpr bool kNtNeedsPersistCall<persist::CpuPersist<K>> = false;
template <>
inline constexpr bool kNtNeedsPersistCall<persist::RunCpuPersist> = false;
template <>
inline constexpr bool kNtNeedsPersistCall<persist::NoPersist> = false;

}  // namespace pmlab::scheme
