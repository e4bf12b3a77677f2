// Uses an installed redbloom through its public headers only: creates a
// filter on the mem: store, adds items and checks them. Exits 0 when every
// added item is found and the filter answers as documented, 1 otherwise.
#include <cstdio>
#include <string_view>
#include <vector>

#include "redbloom/bloom_filter.h"
#include "redbloom/store.h"

namespace {

int Fail(const char* what, const redbloom::Status& s) {
  std::fprintf(stderr, "redbloom_consumer: %s: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

int main() {
  auto store = redbloom::Store::Open("mem:");
  if (!store.ok()) return Fail("open mem:", store.status());
  const redbloom::FilterOptions options{.capacity = 1000, .error_rate = 0.01};
  auto filter = redbloom::BloomFilter::Create(**store, "orders", options);
  if (!filter.ok()) return Fail("create", filter.status());

  const std::vector<std::string_view> items = {"ORD-1", "ORD-2", "ORD-3"};
  std::vector<uint8_t> added;
  if (auto s = (*filter)->AddMany(items, &added); !s.ok()) return Fail("add", s);
  std::vector<uint8_t> present;
  if (auto s = (*filter)->ContainsMany(items, &present); !s.ok()) return Fail("check", s);
  for (size_t i = 0; i < items.size(); ++i) {
    if (added[i] != 1 || present[i] != 1) {
      std::fprintf(stderr, "redbloom_consumer: item %.*s: added %d, present %d\n",
                   static_cast<int>(items[i].size()), items[i].data(), added[i], present[i]);
      return 1;
    }
  }
  // A 1% filter holding 3 items: ORD-404's k bits are all set with
  // probability below 1e-9, so "present" here means the filter is broken.
  auto absent = (*filter)->Contains("ORD-404");
  if (!absent.ok()) return Fail("check ORD-404", absent.status());
  if (*absent) {
    std::fprintf(stderr, "redbloom_consumer: ORD-404 reported present\n");
    return 1;
  }
  std::printf("redbloom_consumer: ok (%zu items added and found)\n", items.size());
  return 0;
}
