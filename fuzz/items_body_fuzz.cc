// The HTTP items body reader against nlohmann::json as the reference: every
// body it accepts is valid JSON of exactly the shape {"items":[...]} with
// the same items, and every such body (within the limits) it accepts.
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
  const redbloom::server::ItemLimits limits{.max_items = 64, .max_item_bytes = 64};

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
  bool items_fit = shape && ref["items"].size() <= limits.max_items;
  if (shape) {
    for (const json& item : ref["items"]) {
      if (item.is_string()) {
        items_fit &= item.get_ref<const std::string&>().size() <= limits.max_item_bytes;
      } else {
        items_fit &= ints && (item.is_number_integer() || item.is_number_float());
      }
    }
  }

  if (status.ok()) {
    if (!shape) Mismatch("accepted a body the reference rejects or of another shape", body);
    const json& items = ref["items"];
    if (items.size() != ours.items().size()) Mismatch("item count differs", body);
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string_view got = ours.items()[i];
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
  // Rejected: a body of the right shape, within the limits, whose items are
  // strings or integers in integer bodies, is a wrong refusal. Numbers with
  // a fraction or exponent are the reference's floats too, so only bodies
  // whose every item is a string are held to it.
  bool all_strings = shape;
  if (shape) {
    for (const json& item : ref["items"]) all_strings &= item.is_string();
  }
  if (all_strings && items_fit) Mismatch("refused a well-formed body", body);
  return 0;
}
