// tests/sanitizers.hpp — whether this test binary runs under AddressSanitizer (GCC
// defines __SANITIZE_ADDRESS__, Clang answers __has_feature): tests that only repeat,
// many times slower, what another test already runs under the sanitizers skip there.
#pragma once

namespace ls::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAsan = true;
#else
inline constexpr bool kAsan = false;
#endif
#else
inline constexpr bool kAsan = false;
#endif

}  // namespace ls::test
