#include "redbloom/transfer.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace redbloom {
namespace {

constexpr uint8_t kGuavaMitz64Ordinal = 1;
constexpr char kDumpMagic[8] = {'R', 'B', 'D', 'U', 'M', 'P', '\r', '\n'};
constexpr uint32_t kDumpVersion = 1;
constexpr size_t kDumpChunk = 1 << 20;
// Bounds what a corrupt or hostile length field can make us allocate.
constexpr uint32_t kMaxHeaderBytes = 1 << 16;

void PutBE(std::string* out, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetBE(const char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint32_t Crc(std::string_view bytes, uint32_t crc = 0) {
  return static_cast<uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

Status WriteAll(std::ostream& out, std::string_view bytes) {
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return Status::Unavailable("write failed");
  return Status::Ok();
}

// Reads exactly n bytes, or fails with kDataLoss naming `what`.
Status ReadExactly(std::istream& in, size_t n, std::string* out, const char* what) {
  out->resize(n);
  in.read(out->data(), static_cast<std::streamsize>(n));
  if (static_cast<size_t>(in.gcount()) != n) {
    if (in.bad()) return Status::Unavailable(std::string("read failed in ") + what);
    return Status::DataLoss(std::string("input ends inside ") + what + " (truncated?)");
  }
  return Status::Ok();
}

// Redis order (bit i at 0x80 >> i%8 of byte i/8) <-> Guava's long words (bit i
// at 1 << i%64 of word i/64). Within one word both cover the same 64 bits:
// Redis byte b of the word holds bits 8b..8b+7 MSB-first, Guava holds them at
// word bits 8b..8b+7 LSB-first, so each byte is bit-reversed and placed at
// byte position b of the little-endian word.
uint8_t Reverse(uint8_t b) {
  b = static_cast<uint8_t>((b & 0xF0) >> 4 | (b & 0x0F) << 4);
  b = static_cast<uint8_t>((b & 0xCC) >> 2 | (b & 0x33) << 2);
  b = static_cast<uint8_t>((b & 0xAA) >> 1 | (b & 0x55) << 1);
  return b;
}

uint64_t RedisBytesToGuavaWord(const char* bytes) {
  uint64_t w = 0;
  for (int b = 0; b < 8; ++b) {
    w |= static_cast<uint64_t>(Reverse(static_cast<uint8_t>(bytes[b]))) << (8 * b);
  }
  return w;
}

void GuavaWordToRedisBytes(uint64_t w, char* bytes) {
  for (int b = 0; b < 8; ++b)
    bytes[b] = static_cast<char>(Reverse(static_cast<uint8_t>(w >> (8 * b))));
}

// Kinds whose cells are one bitmap, which dumps and merges move. Scaling and
// window filters are several bitmaps, created and expired as they go.
bool HasOneBitmap(FilterKind kind) {
  return kind == FilterKind::kPlain || kind == FilterKind::kCounting;
}

// Adds the 4-bit counters of `from` to those of *to, saturating at 15.
void AddCounters(std::string_view from, std::string* to) {
  for (size_t i = 0; i < to->size() && i < from.size(); ++i) {
    const auto a = static_cast<uint8_t>(from[i]), b = static_cast<uint8_t>((*to)[i]);
    const unsigned hi = std::min(15u, unsigned{a} / 16 + unsigned{b} / 16);
    const unsigned lo = std::min(15u, unsigned{a} % 16 + unsigned{b} % 16);
    (*to)[i] = static_cast<char>(hi << 4 | lo);
  }
}

// The header of a dump: the config and the count, as "key=value" lines.
std::string EncodeDumpHeader(const FilterConfig& c, uint64_t items_added) {
  std::string h;
  auto line = [&](std::string_view k, const std::string& v) {
    h.append(k);
    h.push_back('=');
    h.append(v);
    h.push_back('\n');
  };
  line("kind", std::string(FilterKindName(c.kind)));
  line("strategy", std::string(StrategyName(c.strategy)));
  line("encoding", std::string(EncodingName(c.encoding)));
  line("capacity", std::to_string(c.capacity));
  line("error_rate", FormatDouble(c.error_rate));
  line("bits", std::to_string(c.geometry.bits));
  line("hashes", std::to_string(c.geometry.hashes));
  line("capped", c.geometry.capped ? "1" : "0");
  line("items_added", std::to_string(items_added));
  line("data_bytes", std::to_string(c.data_bytes()));
  return h;
}

struct DumpHeader {
  FilterConfig config;
  uint64_t items_added = 0;
};

Result<DumpHeader> DecodeDumpHeader(std::string_view text) {
  std::string kind, strategy, encoding, capacity, error_rate, bits, hashes, capped, items, data;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return Status::DataLoss("dump header line without newline");
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return Status::DataLoss("dump header line without '='");
    const std::string_view key = line.substr(0, eq);
    const std::string value(line.substr(eq + 1));
    if (key == "kind")
      kind = value;
    else if (key == "strategy")
      strategy = value;
    else if (key == "encoding")
      encoding = value;
    else if (key == "capacity")
      capacity = value;
    else if (key == "error_rate")
      error_rate = value;
    else if (key == "bits")
      bits = value;
    else if (key == "hashes")
      hashes = value;
    else if (key == "capped")
      capped = value;
    else if (key == "items_added")
      items = value;
    else if (key == "data_bytes")
      data = value;
    // Unknown keys are ignored: a later minor version may add informational ones.
  }
  auto corrupt = [](const Status& s) { return Status::DataLoss("dump header: " + s.message()); };
  FilterOptions o;
  auto k = ParseFilterKind(kind);
  if (!k.ok()) return corrupt(k.status());
  if (!HasOneBitmap(*k)) {
    return Status::InvalidArgument("the dump holds a " + kind +
                                   " filter; dumps hold plain and counting filters only");
  }
  auto st = ParseStrategy(strategy);
  if (!st.ok()) return corrupt(st.status());
  auto en = ParseEncoding(encoding);
  if (!en.ok()) return corrupt(en.status());
  auto n = ParseUint64(capacity);
  if (!n.ok()) return corrupt(n.status());
  auto p = ParseDouble(error_rate);
  if (!p.ok()) return corrupt(p.status());
  o.kind = *k;
  o.strategy = *st;
  o.encoding = *en;
  o.capacity = *n;
  o.error_rate = *p;
  auto config = MakeConfig(o);
  if (!config.ok()) return corrupt(config.status());
  if (std::to_string(config->geometry.bits) != bits ||
      std::to_string(config->geometry.hashes) != hashes ||
      std::to_string(config->data_bytes()) != data) {
    return Status::DataLoss("dump header: bits/hashes do not match its capacity and error rate");
  }
  DumpHeader h;
  h.config = *config;
  auto count = ParseUint64(items);
  h.items_added = count.ok() ? *count : 0;
  return h;
}

// Opens `name`, creating it with `config` if missing; an existing filter must
// have the same config.
Result<std::unique_ptr<BloomFilter>> OpenOrCreate(Store& store, std::string_view name,
                                                  const FilterConfig& config) {
  auto existing = store.ReadConfig(name);
  if (existing.ok()) {
    if (!existing->SameFilterAs(config)) {
      return Status::Conflict("filter '" + std::string(name) + "' exists with other parameters: " +
                              existing->ToString() + " (the input has " + config.ToString() + ")");
    }
    return BloomFilter::Open(store, name);
  }
  if (existing.status().code() != StatusCode::kNotFound) return existing.status();
  Status s = store.Create(name, config);
  if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
  return BloomFilter::Open(store, name);
}

}  // namespace

Status ExportGuava(BloomFilter& filter, std::ostream& out) {
  const FilterConfig& c = filter.config();
  if (c.strategy != Strategy::kGuava64) {
    return Status::InvalidArgument("Guava's format holds only guava64 filters; '" + filter.name() +
                                   "' uses strategy " + std::string(StrategyName(c.strategy)) +
                                   " (use --format redbloom)");
  }
  std::string bitmap;
  REDBLOOM_RETURN_IF_ERROR(filter.ReadBitmap(&bitmap));
  const uint64_t words = c.geometry.bits / 64;
  bitmap.resize(words * 8, '\0');  // data_bytes() is already whole words for guava64
  std::string buf;
  buf.push_back(static_cast<char>(kGuavaMitz64Ordinal));
  buf.push_back(static_cast<char>(c.geometry.hashes));
  PutBE(&buf, words, 4);
  REDBLOOM_RETURN_IF_ERROR(WriteAll(out, buf));
  buf.clear();
  for (uint64_t w = 0; w < words; ++w) {
    PutBE(&buf, RedisBytesToGuavaWord(bitmap.data() + 8 * w), 8);
    if (buf.size() >= (1 << 16)) {
      REDBLOOM_RETURN_IF_ERROR(WriteAll(out, buf));
      buf.clear();
    }
  }
  REDBLOOM_RETURN_IF_ERROR(WriteAll(out, buf));
  out.flush();
  if (!out) return Status::Unavailable("write failed");
  return Status::Ok();
}

Result<std::unique_ptr<BloomFilter>> ImportGuava(Store& store, std::string_view name,
                                                 std::istream& in,
                                                 const GuavaImportOptions& options) {
  FilterOptions o;
  o.capacity = options.capacity;
  o.error_rate = options.error_rate;
  o.strategy = Strategy::kGuava64;
  o.encoding = options.encoding;
  REDBLOOM_ASSIGN_OR_RETURN(FilterConfig config, MakeConfig(o));

  std::string head;
  REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, 6, &head, "the Guava header"));
  const uint8_t ordinal = static_cast<uint8_t>(head[0]);
  const uint32_t k = static_cast<uint8_t>(head[1]);
  const uint64_t words = GetBE(head.data() + 2, 4);
  if (ordinal != kGuavaMitz64Ordinal) {
    return Status::InvalidArgument(
        "Guava strategy ordinal " + std::to_string(ordinal) +
        " is not supported (only 1, MURMUR128_MITZ_64, Guava's default since 2013)");
  }
  if (words * 64 != config.geometry.bits || k != config.geometry.hashes) {
    return Status::InvalidArgument(
        "the Guava file has m=" + std::to_string(words * 64) + " bits and k=" + std::to_string(k) +
        ", but capacity " + std::to_string(o.capacity) + " and error rate " +
        FormatDouble(o.error_rate) + " give m=" + std::to_string(config.geometry.bits) +
        " and k=" + std::to_string(config.geometry.hashes) +
        "; pass the expectedInsertions and fpp the Java side used");
  }
  // Validate and convert everything before touching the store.
  std::string bitmap(config.data_bytes(), '\0');
  std::string chunk;
  const uint64_t kWordsPerRead = 8192;
  for (uint64_t w = 0; w < words; w += kWordsPerRead) {
    const uint64_t n = std::min(kWordsPerRead, words - w);
    REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, n * 8, &chunk, "the Guava bit array"));
    for (uint64_t i = 0; i < n; ++i) {
      GuavaWordToRedisBytes(GetBE(chunk.data() + 8 * i, 8), bitmap.data() + 8 * (w + i));
    }
  }
  if (in.peek() != std::char_traits<char>::eof()) {
    return Status::InvalidArgument("unexpected bytes after the Guava bit array");
  }
  REDBLOOM_ASSIGN_OR_RETURN(auto filter, OpenOrCreate(store, name, config));
  // Guava does not store a count; estimate it from the bits, as Guava's own
  // approximateElementCount() does.
  uint64_t bits_set = 0;
  for (unsigned char b : bitmap) bits_set += static_cast<uint64_t>(__builtin_popcount(b));
  const uint64_t estimate = ApproximateCount(bits_set, config.geometry.bits, k);
  REDBLOOM_RETURN_IF_ERROR(filter->OrBitmap(bitmap, estimate == UINT64_MAX ? 0 : estimate));
  REDBLOOM_RETURN_IF_ERROR(filter->Flush());
  return filter;
}

Status ExportDump(BloomFilter& filter, std::ostream& out) {
  REDBLOOM_ASSIGN_OR_RETURN(FilterInfo info, filter.Info());
  std::string bitmap;
  REDBLOOM_RETURN_IF_ERROR(filter.ReadBitmap(&bitmap));
  const std::string header = EncodeDumpHeader(filter.config(), info.items_added);
  std::string buf(kDumpMagic, sizeof(kDumpMagic));
  PutBE(&buf, kDumpVersion, 4);
  PutBE(&buf, header.size(), 4);
  buf += header;
  PutBE(&buf, Crc(header), 4);
  REDBLOOM_RETURN_IF_ERROR(WriteAll(out, buf));
  uint64_t chunks = 0;
  uint32_t running = 0;
  for (uint64_t off = 0; off < bitmap.size(); off += kDumpChunk) {
    const std::string_view data =
        std::string_view(bitmap).substr(off, std::min<uint64_t>(kDumpChunk, bitmap.size() - off));
    if (data.find_first_not_of('\0') == std::string_view::npos) continue;
    std::string frame;
    PutBE(&frame, off, 8);
    PutBE(&frame, data.size(), 4);
    const uint32_t crc = Crc(data, Crc(frame));
    REDBLOOM_RETURN_IF_ERROR(WriteAll(out, frame));
    REDBLOOM_RETURN_IF_ERROR(WriteAll(out, data));
    frame.clear();
    PutBE(&frame, crc, 4);
    REDBLOOM_RETURN_IF_ERROR(WriteAll(out, frame));
    running = Crc(std::string_view(frame), running);
    ++chunks;
  }
  // End marker: offset = all ones, then the chunk count and a CRC over every
  // chunk's CRC, so a dump cut at a chunk boundary is detected too.
  std::string end;
  PutBE(&end, UINT64_MAX, 8);
  PutBE(&end, chunks, 8);
  PutBE(&end, running, 4);
  REDBLOOM_RETURN_IF_ERROR(WriteAll(out, end));
  out.flush();
  if (!out) return Status::Unavailable("write failed");
  return Status::Ok();
}

Result<std::unique_ptr<BloomFilter>> ImportDump(Store& store, std::string_view name,
                                                std::istream& in) {
  std::string buf;
  REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, 16, &buf, "the dump header"));
  if (std::memcmp(buf.data(), kDumpMagic, sizeof(kDumpMagic)) != 0) {
    return Status::DataLoss("not a redbloom dump (bad magic)");
  }
  const uint64_t version = GetBE(buf.data() + 8, 4);
  if (version != kDumpVersion) {
    return Status::DataLoss("dump format version " + std::to_string(version) +
                            " is not supported (this build reads version 1)");
  }
  const uint64_t header_len = GetBE(buf.data() + 12, 4);
  if (header_len > kMaxHeaderBytes) return Status::DataLoss("dump header is implausibly large");
  std::string header;
  REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, header_len, &header, "the dump header"));
  REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, 4, &buf, "the dump header"));
  if (GetBE(buf.data(), 4) != Crc(header)) return Status::DataLoss("dump header checksum mismatch");
  REDBLOOM_ASSIGN_OR_RETURN(DumpHeader h, DecodeDumpHeader(header));

  std::string bitmap(h.config.data_bytes(), '\0');
  uint64_t chunks = 0;
  uint32_t running = 0;
  std::string data;
  while (true) {
    REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, 12, &buf, "a dump chunk"));
    const uint64_t off = GetBE(buf.data(), 8);
    if (off == UINT64_MAX) {
      std::string tail;
      REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, 8, &tail, "the dump end marker"));
      const uint64_t expected_chunks = GetBE(buf.data() + 8, 4) << 32 | GetBE(tail.data(), 4);
      if (expected_chunks != chunks || GetBE(tail.data() + 4, 4) != running) {
        return Status::DataLoss("dump end marker does not match its chunks");
      }
      break;
    }
    const uint64_t len = GetBE(buf.data() + 8, 4);
    if (len == 0 || len > kDumpChunk || off > bitmap.size() || len > bitmap.size() - off) {
      return Status::DataLoss("dump chunk at offset " + std::to_string(off) +
                              " lies outside the filter's bitmap");
    }
    const uint32_t frame_crc = Crc(std::string_view(buf).substr(0, 12));
    REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, len, &data, "a dump chunk"));
    std::string crc_bytes;
    REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, 4, &crc_bytes, "a dump chunk"));
    if (GetBE(crc_bytes.data(), 4) != Crc(data, frame_crc)) {
      return Status::DataLoss("dump chunk at offset " + std::to_string(off) +
                              " fails its checksum");
    }
    std::memcpy(bitmap.data() + off, data.data(), len);
    running = Crc(crc_bytes, running);
    ++chunks;
  }
  REDBLOOM_ASSIGN_OR_RETURN(auto filter, OpenOrCreate(store, name, h.config));
  REDBLOOM_RETURN_IF_ERROR(filter->OrBitmap(bitmap, h.items_added));
  REDBLOOM_RETURN_IF_ERROR(filter->Flush());
  return filter;
}

Status Merge(Store& store, std::string_view dest, std::span<const std::string> sources) {
  if (sources.empty()) return Status::InvalidArgument("merge needs at least one source filter");
  std::vector<std::unique_ptr<BloomFilter>> filters;
  for (const auto& name : sources) {
    auto f = BloomFilter::Open(store, name);
    if (!f.ok()) return f.status().WithContext("source '" + name + "'");
    filters.push_back(std::move(f).value());
  }
  const FilterConfig& first = filters.front()->config();
  if (!HasOneBitmap(first.kind)) {
    return Status::InvalidArgument("cannot merge '" + sources[0] + "': it is a " +
                                   std::string(FilterKindName(first.kind)) +
                                   " filter; merges apply to plain and counting filters");
  }
  auto same_geometry = [&](const FilterConfig& c) {
    return c.kind == first.kind && c.strategy == first.strategy && c.encoding == first.encoding &&
           c.geometry.bits == first.geometry.bits && c.geometry.hashes == first.geometry.hashes;
  };
  for (size_t i = 1; i < filters.size(); ++i) {
    if (!same_geometry(filters[i]->config())) {
      return Status::InvalidArgument(
          "cannot merge '" + sources[i] + "' (" + filters[i]->config().ToString() + ") into '" +
          sources[0] + "' (" + first.ToString() +
          "): filters merge only with the same strategy, encoding, bits and hashes");
    }
  }
  // Check the destination before reading any bits.
  std::unique_ptr<BloomFilter> target;
  auto existing = store.ReadConfig(dest);
  if (existing.ok()) {
    if (!same_geometry(*existing)) {
      return Status::InvalidArgument("cannot merge into '" + std::string(dest) + "' (" +
                                     existing->ToString() + "): its geometry differs from '" +
                                     sources[0] + "' (" + first.ToString() + ")");
    }
    REDBLOOM_ASSIGN_OR_RETURN(target, BloomFilter::Open(store, dest));
  } else if (existing.status().code() == StatusCode::kNotFound) {
    Status s = store.Create(dest, first);
    if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
    REDBLOOM_ASSIGN_OR_RETURN(target, BloomFilter::Open(store, dest));
  } else {
    return existing.status();
  }

  // Sources are combined here first, then merged into dest in one call: bits
  // are ORed, counters added (see BitStore::OrBits).
  std::string merged(first.data_bytes(), '\0');
  std::string bits;
  uint64_t items = 0;
  for (auto& f : filters) {
    if (f->name() == dest) continue;  // its cells are already there
    REDBLOOM_RETURN_IF_ERROR(f->ReadBitmap(&bits));
    if (first.kind == FilterKind::kCounting) {
      AddCounters(bits, &merged);
    } else {
      for (size_t i = 0; i < merged.size(); ++i) {
        merged[i] = static_cast<char>(merged[i] | bits[i]);
      }
    }
    REDBLOOM_ASSIGN_OR_RETURN(FilterInfo info, f->Info());
    items += info.items_added;
  }
  REDBLOOM_RETURN_IF_ERROR(target->OrBitmap(merged, items));
  return target->Flush();
}

}  // namespace redbloom
