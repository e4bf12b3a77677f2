// Dump and Guava-file imports into a memory store: any bytes give a filter or
// an error, never a crash, an over-read or an allocation the input does not
// justify (libFuzzer's -malloc_limit_mb catches those).
//
// The first byte picks the format, and for dumps whether to set every CRC
// right first (docs/dump-format.md), so that the fuzzer reaches the header's
// fields and the chunks' bounds rather than stopping at a checksum.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "redbloom/store.h"
#include "redbloom/transfer.h"

namespace {

uint64_t GetBE(const std::string& s, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(s[at + i]);
  return v;
}

void PutBE(std::string* s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[at + i] = static_cast<char>(v >> (24 - 8 * i));
}

uint32_t Crc(const std::string& s, size_t at, size_t n, uint32_t crc = 0) {
  return static_cast<uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(s.data() + at), static_cast<uInt>(n)));
}

// Rewrites the header CRC, each chunk's CRC and the end marker's as a writer
// would, as far as the bytes have the shape of a dump.
void FixCrcs(std::string* d) {
  if (d->size() < 16) return;
  const uint64_t header = GetBE(*d, 12, 4);
  size_t at = 16 + header;
  if (header > 65536 || at + 4 > d->size()) return;
  PutBE(d, at, Crc(*d, 16, header));
  at += 4;
  uint32_t running = 0;
  while (at + 12 <= d->size()) {
    if (GetBE(*d, at, 8) == UINT64_MAX) {
      if (at + 20 <= d->size()) PutBE(d, at + 16, running);
      return;
    }
    const uint64_t length = GetBE(*d, at + 8, 4);
    if (at + 12 + length + 4 > d->size()) return;
    PutBE(d, at + 12 + length, Crc(*d, at + 12, length, Crc(*d, at, 12)));
    running = Crc(*d, at + 12 + length, 4, running);
    at += 12 + length + 4;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto store = redbloom::Store::Open("mem:");
  if (!store.ok()) std::abort();
  std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 1) == 0) {
    if ((data[0] & 2) != 0) FixCrcs(&bytes);
    std::istringstream in(bytes);
    (void)redbloom::ImportDump(**store, "f", in);
  } else {
    redbloom::GuavaImportOptions options;
    options.encoding = (data[0] & 2) != 0 ? redbloom::Encoding::kInt64 : redbloom::Encoding::kUtf8;
    std::istringstream in(bytes);
    (void)redbloom::ImportGuava(**store, "f", in, options);
  }
  return 0;
}
