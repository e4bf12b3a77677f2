// The number readers of flags, stored configs and dumps, against references
// written plainly here: ParseUint64 (with its exact "1e6"-style decimals),
// ParseDurationMillis, and redbloomd's ParseByteSize and ParseListen. The
// first byte picks the reader, the rest is its text.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "config.h"
#include "redbloom/filter_config.h"

namespace {

using u128 = unsigned __int128;

[[noreturn]] void Fail(const char* what, std::string_view text, const std::string& more = "") {
  std::fprintf(stderr, "numbers_fuzz: %s: '%.*s' %s\n", what, static_cast<int>(text.size()),
               text.data(), more.c_str());
  std::abort();
}

size_t LeadingDigits(std::string_view text) {
  size_t n = 0;
  while (n < text.size() && text[n] >= '0' && text[n] <= '9') ++n;
  return n;
}

// The digits' value, or nullopt past 2^100 (far past any limit checked).
std::optional<u128> ValueOf(std::string_view digits) {
  u128 v = 0;
  for (char c : digits) {
    v = v * 10 + static_cast<unsigned>(c - '0');
    if (v > (u128{1} << 100)) return std::nullopt;
  }
  return v;
}

enum class Decimal { kNotANumber, kWhole, kPast2To64, kFraction };

// DIGITS[.DIGITS][(e|E)[+|-]DIGITS], at least one mantissa digit, read
// exactly: its digits and a power of ten, never a double.
Decimal ReadDecimal(std::string_view text, uint64_t* value) {
  size_t i = LeadingDigits(text);
  std::string digits(text.substr(0, i));
  long long scale = 0;  // value = digits * 10^scale
  if (i < text.size() && text[i] == '.') {
    const size_t n = LeadingDigits(text.substr(i + 1));
    digits += text.substr(i + 1, n);
    scale -= static_cast<long long>(n);
    i += 1 + n;
  }
  if (digits.empty()) return Decimal::kNotANumber;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const bool negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    std::string_view exponent = text.substr(i, LeadingDigits(text.substr(i)));
    if (exponent.empty()) return Decimal::kNotANumber;
    i += exponent.size();
    exponent.remove_prefix(std::min(exponent.find_first_not_of('0'), exponent.size()));
    // Saturated far past any text's length: the sign decides then.
    const long long e =
        exponent.size() > 15 ? 1'000'000'000'000LL : std::stoll("0" + std::string(exponent));
    scale += negative ? -e : e;
  }
  if (i != text.size()) return Decimal::kNotANumber;
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.empty()) {
    *value = 0;
    return Decimal::kWhole;
  }
  const size_t last = digits.find_last_not_of('0');
  scale += static_cast<long long>(digits.size() - 1 - last);
  digits.resize(last + 1);
  if (scale < 0) return Decimal::kFraction;
  if (static_cast<long long>(digits.size()) + scale > 20) return Decimal::kPast2To64;
  digits.append(static_cast<size_t>(scale), '0');
  if (digits.size() == 20 && digits > "18446744073709551615") return Decimal::kPast2To64;
  *value = std::stoull(digits);
  return Decimal::kWhole;
}

void CheckUint64(std::string_view text) {
  uint64_t want = 0;
  const Decimal ref = ReadDecimal(text, &want);
  const auto got = redbloom::ParseUint64(text);
  if (got.ok() != (ref == Decimal::kWhole)) {
    Fail("ParseUint64 and the reference disagree", text,
         "reference " + std::to_string(static_cast<int>(ref)) + ", parsed " +
             (got.ok() ? std::to_string(*got) : got.status().message()));
  }
  if (got.ok() && *got != want) Fail("ParseUint64's value", text, std::to_string(*got));
  if (!got.ok() && got.status().message().ends_with("is too large (past 2^64)") !=
                       (ref == Decimal::kPast2To64)) {
    Fail("ParseUint64's reason", text, got.status().message());
  }
}

void CheckDuration(std::string_view text) {
  const size_t n = LeadingDigits(text);
  const std::string_view unit = text.substr(n);
  uint64_t scale = 0;
  if (unit == "ms") scale = 1;
  if (unit.empty() || unit == "s") scale = 1000;
  if (unit == "m") scale = 60'000;
  if (unit == "h") scale = 3'600'000;
  if (unit == "d") scale = 86'400'000;
  const auto got = redbloom::ParseDurationMillis(text);
  const std::optional<u128> number = ValueOf(text.substr(0, n));
  // Taken while its milliseconds, in microseconds, fit in 64 bits.
  // (A number past 2^64 first: times 86,400,000 it could wrap 128 bits.)
  const bool fits = n > 0 && scale != 0 && number && *number <= UINT64_MAX &&
                    *number * scale * 1000 <= UINT64_MAX;
  if (got.ok() != fits) Fail("ParseDurationMillis took another set", text);
  if (got.ok() && *got != static_cast<uint64_t>(*number * scale)) Fail("a duration's value", text);
}

void CheckByteSize(std::string_view text) {
  const size_t n = LeadingDigits(text);
  std::string unit(text.substr(n));
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = -1;
  if (unit.empty()) shift = 0;
  if (unit == "k" || unit == "kib") shift = 10;
  if (unit == "m" || unit == "mib") shift = 20;
  if (unit == "g" || unit == "gib") shift = 30;
  if (unit == "t" || unit == "tib") shift = 40;
  const auto got = redbloom::server::ParseByteSize(text);
  const std::optional<u128> number = ValueOf(text.substr(0, n));
  // (A number past 2^63 first: shifted by 40 it could wrap 128 bits.)
  const bool fits =
      n > 0 && shift >= 0 && number && *number <= INT64_MAX && (*number << shift) <= INT64_MAX;
  if (got.ok() != fits) {
    Fail("ParseByteSize took another set", text,
         got.ok() ? std::to_string(*got) : got.status().message());
  }
  if (got.ok() && *got != static_cast<uint64_t>(*number << shift))
    Fail("a byte size's value", text);
}

// No reference for what is taken; what is taken reads back the same when
// written again, and what is refused says why.
void CheckListen(std::string_view text) {
  std::string host;
  int port = -1;
  const redbloom::Status status = redbloom::server::ParseListen(text, &host, &port);
  if (!status.ok()) {
    if (status.message().empty()) Fail("ParseListen refused without a message", text);
    return;
  }
  if (host.empty() || port < 0 || port > 65535) Fail("ParseListen's result", text);
  const std::string again =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  std::string host2;
  int port2 = -1;
  if (!redbloom::server::ParseListen(again, &host2, &port2).ok() || host2 != host ||
      port2 != port) {
    Fail("ParseListen does not read its result back", text, again);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      CheckUint64(text);
      break;
    case 1:
      CheckDuration(text);
      break;
    case 2:
      CheckByteSize(text);
      break;
    default:
      CheckListen(text);
      break;
  }
  return 0;
}
