// A file store's header as read from a file of any size: decoded or refused,
// and a decoded header encodes back to one that decodes to the same config.
// The top bit of the size asks for a version-2 header's CRC to be set right
// first (file_header.cc), so that the fuzzer reaches the fields behind it.
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "file/file_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using redbloom::internal::kHeaderBytes;
  if (size < 8) return 0;
  uint64_t file_size = 0;
  std::memcpy(&file_size, data, 8);
  std::vector<uint8_t> header(kHeaderBytes, 0);
  std::memcpy(header.data(), data + 8, std::min<size_t>(size - 8, kHeaderBytes));
  if ((file_size >> 63) != 0) {
    file_size &= ~(uint64_t{1} << 63);
    uint32_t text = 0;
    std::memcpy(&text, header.data() + 40, 4);  // little-endian, as on this host
    if (text <= kHeaderBytes - 16 - 64) {
      uLong crc = crc32(0, header.data(), 44);
      crc = crc32(crc, header.data() + 64, text);
      const uint32_t v = static_cast<uint32_t>(crc);
      std::memcpy(header.data() + 44, &v, 4);
    }
  }
  auto decoded = redbloom::internal::DecodeFileHeader(header.data(), file_size, "fuzz");
  if (!decoded.ok()) return 0;
  redbloom::internal::FileHeader again = *decoded;
  std::vector<uint8_t> encoded(kHeaderBytes, 0);
  if (!redbloom::internal::EncodeFileHeader(&again, encoded.data()).ok()) std::abort();
  auto round = redbloom::internal::DecodeFileHeader(encoded.data(), file_size, "fuzz");
  if (!round.ok() || !(round->config == decoded->config)) std::abort();
  return 0;
}
