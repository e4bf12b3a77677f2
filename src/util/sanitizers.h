// Whether this build runs under a sanitizer, as constants that code can
// branch on (the macros differ: GCC defines __SANITIZE_*__, clang answers
// __has_feature). Internal; tests use them too.
#ifndef REDBLOOM_UTIL_SANITIZERS_H_
#define REDBLOOM_UTIL_SANITIZERS_H_

// __has_feature(x) where the compiler has it (clang), else 0 (GCC 12 has
// not, and an undefined function-like macro in #if is an error).
#if defined(__has_feature)
#define REDBLOOM_HAS_FEATURE(x) __has_feature(x)
#else
#define REDBLOOM_HAS_FEATURE(x) 0
#endif

namespace redbloom::internal {

#if defined(__SANITIZE_THREAD__) || REDBLOOM_HAS_FEATURE(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

#if defined(__SANITIZE_ADDRESS__) || REDBLOOM_HAS_FEATURE(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace redbloom::internal

#endif  // REDBLOOM_UTIL_SANITIZERS_H_
