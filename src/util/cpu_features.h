// What this CPU can run, asked once per process: the vector forms of the
// hash and the kernels (gnu::target functions) are called only where these
// say yes. False off x86-64 or without GCC/clang's CPU builtins.
#ifndef REDBLOOM_UTIL_CPU_FEATURES_H_
#define REDBLOOM_UTIL_CPU_FEATURES_H_

namespace redbloom::internal {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define REDBLOOM_X86_CPU_FEATURES 1
#endif

// AVX2 (block's line kernels).
inline bool CpuHasAvx2() {
#ifdef REDBLOOM_X86_CPU_FEATURES
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
#else
  return false;
#endif
}

// AVX-512 F and DQ: 64-bit lanes with multiplies and conversions to and from
// double (guava64's offsets, the batched Murmur3).
inline bool CpuHasAvx512() {
#ifdef REDBLOOM_X86_CPU_FEATURES
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  }();
  return has;
#else
  return false;
#endif
}

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_CPU_FEATURES_H_
