// A stored config (the "key=value" lines of a file header, a dump or a Redis
// meta record): read or refused; one that reads writes back to the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace redbloom::internal;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto fields = LinesToFields(text, "fuzz");
  if (!fields.ok()) return 0;
  auto config = ConfigFromFields(*fields, "fuzz");
  if (!config.ok()) return 0;
  auto again = LinesToFields(FieldsToLines(ConfigToFields(*config)), "again");
  if (!again.ok()) std::abort();
  auto round = ConfigFromFields(*again, "again");
  if (!round.ok() || !(*round == *config)) std::abort();
  return 0;
}
