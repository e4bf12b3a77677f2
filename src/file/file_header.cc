#include "file/file_header.h"

#include <zlib.h>

#include <bit>
#include <cstring>

#include "config_codec.h"
#include "kinds/kind_def.h"

namespace redbloom::internal {
namespace {

constexpr char kMagic[8] = {'R', 'E', 'D', 'B', 'L', 'O', 'O', 'M'};
constexpr uint32_t kVersion = 2;

// Version 2: [0,8) magic, [8,12) version, [12,16) header size, [16,24) part,
// [24,32) expires_at_ms, [32,40) data bytes, [40,44) config text length,
// [44,48) CRC-32 of [0,44) and the text, [64, 64+len) the text. Mutable
// fields at the end: parts made, item count, then the replaced flag.
constexpr size_t kTextOffset = 64;
constexpr size_t kPartsOffset = kHeaderBytes - 24;
constexpr size_t kCountOffset = kHeaderBytes - 16;
constexpr size_t kSupersededOffset = kHeaderBytes - 8;
// Files written before the parts field had room for a longer text; they are
// still read (no config comes near either bound), without the field.
constexpr size_t kMaxText = kPartsOffset - kTextOffset;
constexpr size_t kMaxOldText = kCountOffset - kTextOffset;

// Version 1, read only (docs/file-format.md keeps its table).
constexpr size_t kV1Checksummed = 124;
constexpr size_t kV1CountOffset = 256;
constexpr size_t kV1SupersededOffset = 264;
// A scaling filter's layer count, the main file's layer included (1 for a
// filter that never grew): layers made is this less one's worth of parts,
// the same number version 2 records (RecordPart keeps both up to date).
constexpr size_t kV1LayersOffset = 272;

void PutLE(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t GetLE(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint32_t Crc(const uint8_t* bytes, size_t n, uint32_t crc = 0) {
  return static_cast<uint32_t>(crc32(crc, bytes, static_cast<uInt>(n)));
}

// The fields of a version-1 header, as the config codec names them; the ids
// of that version are the kinds', strategies' and encodings' stored ids.
Result<FieldMap> V1Fields(const uint8_t* h) {
  FieldMap f;
  f["kind"] = std::string(FilterKindName(static_cast<FilterKind>(h[16])));
  f["strategy"] = std::string(StrategyName(static_cast<Strategy>(h[17])));
  f["encoding"] = std::string(EncodingName(static_cast<Encoding>(h[18])));
  f["hashes"] = std::to_string(GetLE(h + 20, 4));
  f["bits"] = std::to_string(GetLE(h + 24, 8));
  f["capacity"] = std::to_string(GetLE(h + 32, 8));
  f["error_rate"] = FormatDouble(std::bit_cast<double>(GetLE(h + 40, 8)));
  f["capped"] = (GetLE(h + 56, 4) & 1) != 0 ? "1" : "0";
  if ((GetLE(h + 56, 4) & 2) != 0) f["geometry"] = "given";
  f["slices"] = std::to_string(GetLE(h + 60, 4));
  f["expansion"] = FormatDouble(std::bit_cast<double>(GetLE(h + 64, 8)));
  f["window_ms"] = std::to_string(GetLE(h + 72, 8));
  f["ttl_seconds"] = std::to_string(GetLE(h + 80, 8));
  return f;
}

}  // namespace

uint64_t FileDataBytes(const FilterConfig& c, uint64_t cells) {
  return (cells * c.cell_bits() + 63) / 64 * 8;
}

Result<Geometry> FileGeometry(const FilterConfig& c, uint64_t part) {
  if (part == kMainPart) {
    // A kind of no parts at creation (a window) keeps no cells in its main file.
    if (KindOf(c.kind).initial_parts(c) == 0) return Geometry{};
    part = 0;
  }
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing s, SizePart(c, part));
  return s.geometry;
}

Status EncodeFileHeader(FileHeader* f, uint8_t* h) {
  const std::string text = FieldsToLines(ConfigToFields(f->config));
  if (text.size() > kMaxText) {
    return Status::InvalidArgument("filter config does not fit a file header");
  }
  std::memset(h, 0, kHeaderBytes);
  std::memcpy(h, kMagic, 8);
  PutLE(h + 8, kVersion, 4);
  PutLE(h + 12, kHeaderBytes, 4);
  PutLE(h + 16, f->part, 8);
  PutLE(h + 24, f->expires_at_ms, 8);
  PutLE(h + 32, f->data_bytes, 8);
  PutLE(h + 40, text.size(), 4);
  std::memcpy(h + kTextOffset, text.data(), text.size());
  PutLE(h + 44, Crc(h + kTextOffset, text.size(), Crc(h, 44)), 4);
  f->count_offset = kCountOffset;
  f->superseded_offset = kSupersededOffset;
  f->parts_offset = kPartsOffset;
  f->parts_made = 0;
  return Status::Ok();
}

Result<FileHeader> DecodeFileHeader(const uint8_t* h, uint64_t file_size, const std::string& path) {
  auto corrupt = [&](const std::string& why) { return Status::DataLoss(path + ": " + why); };
  if (file_size < kHeaderBytes) return corrupt("file is too short to be a redbloom filter");
  if (std::memcmp(h, kMagic, 8) != 0) return corrupt("not a redbloom filter file (bad magic)");
  const uint32_t version = static_cast<uint32_t>(GetLE(h + 8, 4));
  FileHeader f;
  FieldMap fields;
  if (version == kVersion) {
    const uint64_t len = GetLE(h + 40, 4);
    if (len > kMaxOldText) return corrupt("config text is longer than the header");
    if (GetLE(h + 44, 4) != Crc(h + kTextOffset, len, Crc(h, 44))) {
      return corrupt("header checksum mismatch");
    }
    f.part = GetLE(h + 16, 8);
    f.expires_at_ms = GetLE(h + 24, 8);
    f.data_bytes = GetLE(h + 32, 8);
    f.count_offset = kCountOffset;
    f.superseded_offset = kSupersededOffset;
    if (len <= kMaxText) {
      f.parts_offset = kPartsOffset;
      f.parts_made = GetLE(h + kPartsOffset, 8);
    }
    REDBLOOM_ASSIGN_OR_RETURN(
        fields,
        LinesToFields(std::string_view(reinterpret_cast<const char*>(h + kTextOffset), len), path));
  } else if (version == 1) {
    if (GetLE(h + kV1Checksummed, 4) != Crc(h, kV1Checksummed)) {
      return corrupt("header checksum mismatch");
    }
    f.data_bytes = GetLE(h + 48, 8);
    f.expires_at_ms = GetLE(h + 88, 8);
    f.part = GetLE(h + 96, 8);
    f.count_offset = kV1CountOffset;
    f.superseded_offset = kV1SupersededOffset;
    // Version 2's "parts made" is the last part's number plus one, which
    // the layer count is once a filter grew; 1 (or 0) means no part.
    f.parts_offset = kV1LayersOffset;
    const uint64_t layers = GetLE(h + kV1LayersOffset, 8);
    f.parts_made = layers <= 1 ? 0 : layers;
    REDBLOOM_ASSIGN_OR_RETURN(fields, V1Fields(h));
  } else {
    return corrupt("format version " + std::to_string(version) +
                   " is not supported (this build reads versions 1 and 2)");
  }
  if (GetLE(h + 12, 4) != kHeaderBytes) return corrupt("unexpected header size");
  REDBLOOM_ASSIGN_OR_RETURN(f.config, ConfigFromFields(fields, path));
  if (version == 1 && h[19] != f.config.cell_bits()) return corrupt("unexpected cell width");
  auto geometry = FileGeometry(f.config, f.part);
  if (!geometry.ok() || f.data_bytes != FileDataBytes(f.config, geometry->bits) ||
      file_size != kHeaderBytes + f.data_bytes) {
    return corrupt("file size does not match the header (truncated?)");
  }
  return f;
}

}  // namespace redbloom::internal
