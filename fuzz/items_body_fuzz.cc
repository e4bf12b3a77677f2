// The HTTP items body reader against nlohmann::json as the reference: every
// body it accepts is valid JSON of exactly the shape {"items":[...]} with
// the same items, within the limits, and every such body of strings within
// the limits it accepts.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "items_body.h"

namespace {

using nlohmann::json;

[[noreturn]] void Mismatch(const char* what, std::string_view body) {
  std::fprintf(stderr, "items_body_fuzz: %s\nbody: %.*s\n", what, static_cast<int>(body.size()),
               body.data());
  std::abort();
}

bool IsIntegerText(std::string_view s) {
  size_t i = s.starts_with('-') ? 1 : 0;
  if (i == s.size()) return false;
  if (s[i] == '0') return i + 1 == s.size();
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

// Whether the item's text is `want` ("-0" is 0, as the funnel reads it).
template <typename Int>
bool SameValue(std::string_view text, Int want) {
  Int got = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), got);
  return ec == std::errc() && end == text.data() + text.size() && got == want;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool ints = (data[0] & 1) != 0;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  // Small limits, so that bodies at and past them are common.
  const redbloom::server::ItemLimits limits{.max_items = 4, .max_item_bytes = 8};

  redbloom::server::ItemsBody ours;
  const redbloom::Status status = ours.Parse(body, ints, limits);

  // The reference, counting the top-level keys (its object keeps one of two
  // equal keys; the reader must refuse both).
  int top_keys = 0;
  const json ref = json::parse(
      body.begin(), body.end(),
      [&](int depth, json::parse_event_t event, json&) {
        if (event == json::parse_event_t::key && depth == 1) ++top_keys;
        return true;
      },
      /*allow_exceptions=*/false);
  // nlohmann 3.11 stops reading at a NUL byte, which is invalid JSON anywhere.
  const bool shape = body.find('\0') == std::string_view::npos && !ref.is_discarded() &&
                     ref.is_object() && top_keys == 1 && ref.contains("items") &&
                     ref["items"].is_array();
  if (status.ok()) {
    if (!shape) Mismatch("accepted a body the reference rejects or of another shape", body);
    const json& items = ref["items"];
    if (items.size() != ours.items().size()) Mismatch("item count differs", body);
    if (items.size() > limits.max_items) Mismatch("accepted more items than the limit", body);
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string_view got = ours.items()[i];
      if (got.size() > limits.max_item_bytes) Mismatch("accepted an item past the limit", body);
      if (items[i].is_string()) {
        if (got != items[i].get_ref<const std::string&>()) Mismatch("string item differs", body);
      } else if (!ints || !IsIntegerText(got)) {
        Mismatch("a non-string item that is not an integer", body);
      } else if (items[i].is_number_unsigned()) {
        if (!SameValue(got, items[i].get<uint64_t>())) Mismatch("integer item differs", body);
      } else if (items[i].is_number_integer()) {
        if (!SameValue(got, items[i].get<int64_t>())) Mismatch("integer item differs", body);
      }
    }
    return 0;
  }
  // Rejected: a body of the right shape whose items are all strings within
  // the limits is a wrong refusal. (Integer bodies are not held to it: the
  // reference reads 1e3 and 1.5 as numbers too, which the reader refuses.)
  bool strings_that_fit = shape && ref["items"].size() <= limits.max_items;
  if (strings_that_fit) {
    for (const json& item : ref["items"]) {
      strings_that_fit &=
          item.is_string() && item.get_ref<const std::string&>().size() <= limits.max_item_bytes;
    }
  }
  if (strings_that_fit) Mismatch("refused a well-formed body", body);
  return 0;
}
