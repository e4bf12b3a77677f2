// The header of a file: store file (docs/file-format.md). Internal.
//
// Version 2 (written): a fixed binary prefix, then the filter's config as
// the config codec's "key=value" lines, all under one CRC-32; the mutable
// fields (parts made, item count, replaced flag) sit at the header's end,
// outside the CRC.
// Version 1 (read only): the older all-binary header, whose fields are turned
// into the codec's fields so both versions pass the same validation.
#ifndef REDBLOOM_SRC_FILE_FILE_HEADER_H_
#define REDBLOOM_SRC_FILE_FILE_HEADER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "redbloom/filter_config.h"
#include "redbloom/status.h"

namespace redbloom::internal {

inline constexpr uint64_t kHeaderBytes = 4096;  // data starts page-aligned
// The part number of a filter's main file (its part 0, or no cells at all
// for a window filter).
inline constexpr uint64_t kMainPart = UINT64_MAX;

struct FileHeader {
  FilterConfig config;
  uint64_t part = kMainPart;
  uint64_t expires_at_ms = 0;
  uint64_t data_bytes = 0;
  // Where the mutable 8-byte fields live (they differ between versions).
  size_t count_offset = 0;
  size_t superseded_offset = 0;
  // A main file's record of its dense parts (KindDef::dense_parts): at least
  // this many, parts 0..N-1, were made; 0 when none is recorded. Raised after
  // a part is made, never lowered, so it may lag but never leads. Offset 0
  // when the header has no such field (version 1, or a version-2 config text
  // long enough to cover it).
  size_t parts_offset = 0;
  uint64_t parts_made = 0;
};

// Bytes of a file's cells: whole 64-bit words.
uint64_t FileDataBytes(const FilterConfig& config, uint64_t cells);
// The geometry of a file's array (bits: its cells): a window filter's main
// file has none (all zero); part 0 of other kinds lives in the main file.
Result<Geometry> FileGeometry(const FilterConfig& config, uint64_t part);

// Fills `header` (kHeaderBytes) with a version-2 header; sets the offsets in
// *f. kInvalidArgument if the config's text does not fit.
Status EncodeFileHeader(FileHeader* f, uint8_t* header);
// Validates a header read from a file of `file_size` bytes: kDataLoss naming
// `path` for anything wrong, including a size that does not match.
Result<FileHeader> DecodeFileHeader(const uint8_t* header, uint64_t file_size,
                                    const std::string& path);

}  // namespace redbloom::internal

#endif  // REDBLOOM_SRC_FILE_FILE_HEADER_H_
