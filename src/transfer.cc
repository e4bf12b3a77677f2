#include "redbloom/transfer.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <functional>
#include <ios>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "config_codec.h"
#include "kinds/kind_def.h"
#include "stores.h"
#include "util/errno_text.h"
#include "util/out_of_memory.h"
#include "word_bits.h"

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

// A stream tells no reason for a failed write; a file stream's write(2)
// leaves one in errno. A full disk is kResourceExhausted, as everywhere
// (it was "unavailable: write failed", retryable).
Status WriteFailed(int err) {
  if (internal::IsNoRoom(err) || err == ENOMEM) {
    return Status::ResourceExhausted("write failed: " + internal::ErrnoText(err));
  }
  return Status::Unavailable(err == 0 ? std::string("write failed")
                                      : "write failed: " + internal::ErrnoText(err));
}

Status WriteAll(std::ostream& out, std::string_view bytes) {
  errno = 0;
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return WriteFailed(errno);
  return Status::Ok();
}

// A stream that had failed before the export began (a file that did not
// open) is the caller's to fix, not a write to retry.
Status CheckOutput(const std::ostream& out) {
  if (!out.fail()) return Status::Ok();
  return Status::InvalidArgument(
      "the output stream had failed before it was written (a file that did not open?)");
}

Status Flush(std::ostream& out) {
  errno = 0;
  out.flush();
  if (!out) return WriteFailed(errno);
  return Status::Ok();
}

// Reads up to n bytes into *out (fewer at the input's end).
Status ReadUpTo(std::istream& in, size_t n, std::string* out, const char* what) {
  out->resize(n);
  in.read(out->data(), static_cast<std::streamsize>(n));
  if (in.bad()) return Status::Unavailable(std::string("read failed in ") + what);
  out->resize(static_cast<size_t>(in.gcount()));
  return Status::Ok();
}

// Reads exactly n bytes, or fails with kDataLoss naming `what`.
Status ReadExactly(std::istream& in, size_t n, std::string* out, const char* what) {
  REDBLOOM_RETURN_IF_ERROR(ReadUpTo(in, n, out, what));
  if (out->size() != n) {
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

// The header of a dump: the config, the count and the part table, as
// "key=value" lines. `parts` lists "id:items:bytes" per part (its size is
// the config's: their bytes are read later), in the order their bytes
// follow one another in the dump's data. *base gets each part's first byte.
Result<std::string> EncodeDumpHeader(const FilterConfig& c,
                                     std::span<const BloomFilter::Part> parts,
                                     std::map<uint64_t, uint64_t>* base) {
  uint64_t items = 0, bytes = 0;
  std::string table;
  for (const auto& p : parts) {
    REDBLOOM_ASSIGN_OR_RETURN(uint64_t size, PartBytes(c, p.id));
    (*base)[p.id] = bytes;
    items += p.items;
    bytes += size;
    if (!table.empty()) table.push_back(',');
    table += std::to_string(p.id) + ":" + std::to_string(p.items) + ":" + std::to_string(size);
  }
  std::vector<internal::ConfigField> fields = internal::ConfigToFields(c);
  fields.emplace_back("items_added", std::to_string(items));
  fields.emplace_back("data_bytes", std::to_string(bytes));
  fields.emplace_back("parts", table);
  return internal::FieldsToLines(fields);
}

// A part count of a dump. Counting filters on file: and mem: kept a count
// that removes took below zero as 2^64 - n, and exported it so: such a count
// is read as 0, as the filter now reads it (Redis refused to add it).
uint64_t PlausibleCount(uint64_t count) {
  return count > static_cast<uint64_t>(INT64_MAX) ? 0 : count;
}

struct DumpHeader {
  FilterConfig config;
  // Each part's id, count and size; bytes are left empty until the data is
  // read, in this order.
  std::vector<BloomFilter::Part> parts;
  std::vector<uint64_t> part_bytes;
  uint64_t data_bytes = 0;
};

Result<DumpHeader> DecodeDumpHeader(std::string_view text) {
  // Unknown keys are kept and ignored: a later minor version may add
  // informational ones.
  REDBLOOM_ASSIGN_OR_RETURN(internal::FieldMap fields,
                            internal::LinesToFields(text, "dump header"));
  auto field = [&](std::string_view key) -> std::string {
    auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
  };
  auto corrupt = [](const Status& s) { return Status::DataLoss("dump header: " + s.message()); };
  auto config = internal::ConfigFromFields(fields, "dump header");
  if (!config.ok()) return config.status();
  DumpHeader h;
  h.config = *config;
  auto data = ParseUint64(field("data_bytes"));
  if (!data.ok()) return corrupt(data.status());
  h.data_bytes = *data;
  auto items = ParseUint64(field("items_added"));
  if (!fields.contains("parts") && h.config.kind == FilterKind::kWindow) {
    // Window dumps were refused before the part table: read as one part,
    // slice 0 of 1970 would be dropped as expired, and the import answer ok.
    return Status::DataLoss("dump header: a window filter's dump has no part table");
  }
  if (!fields.contains("parts")) {
    // Written before dumps had a part table: one part, the whole bitmap.
    h.parts.resize(1);
    h.parts[0].items = items.ok() ? PlausibleCount(*items) : 0;
    h.part_bytes.push_back(h.data_bytes);
  } else {
    std::string_view table = fields.find("parts")->second;
    while (!table.empty()) {
      const size_t comma = table.find(',');
      const std::string_view entry = table.substr(0, comma);
      table = comma == std::string_view::npos ? std::string_view() : table.substr(comma + 1);
      const size_t c1 = entry.find(':'), c2 = entry.rfind(':');
      if (c1 == std::string_view::npos || c1 == c2) {
        return Status::DataLoss("dump header: bad part entry '" + std::string(entry) + "'");
      }
      auto id = ParseUint64(entry.substr(0, c1));
      auto count = ParseUint64(entry.substr(c1 + 1, c2 - c1 - 1));
      auto bytes = ParseUint64(entry.substr(c2 + 1));
      if (!id.ok() || !count.ok() || !bytes.ok()) {
        return Status::DataLoss("dump header: bad part entry '" + std::string(entry) + "'");
      }
      BloomFilter::Part part;
      part.id = *id;
      part.items = PlausibleCount(*count);
      h.parts.push_back(std::move(part));
      h.part_bytes.push_back(*bytes);
    }
  }
  // Every part must be one this config has, at its size, once, in order.
  uint64_t total = 0;
  for (size_t i = 0; i < h.parts.size(); ++i) {
    const uint64_t id = h.parts[i].id;
    auto want = PartBytes(h.config, id);
    if (!want.ok() || *want != h.part_bytes[i] || (i > 0 && id <= h.parts[i - 1].id)) {
      return Status::DataLoss("dump header: part " + std::to_string(id) +
                              " does not fit the filter's config");
    }
    // A slice whose expiry, (id + slices + 1) slice lengths, wraps past
    // 2^64 ms or Redis's PEXPIREAT range was read as long expired: its items
    // dropped, the import answered ok.
    if (h.config.kind == FilterKind::kWindow &&
        id > static_cast<uint64_t>(INT64_MAX) / h.config.slice_millis() - h.config.slices - 1) {
      return Status::DataLoss("dump header: slice " + std::to_string(id) +
                              " lies past any time a clock reads");
    }
    total += h.part_bytes[i];
  }
  if (total != h.data_bytes || (h.parts.empty() && h.config.one_array())) {
    return Status::DataLoss("dump header: the part table does not add up to data_bytes");
  }
  // And every part the filter keeps while it lives must be there: a shard or
  // layer left out (a dump written while one was lost) would import as a
  // filter missing its items. Window slices come and go.
  const bool dense = internal::KindOf(h.config.kind).dense_parts;
  const uint64_t kept = h.config.initial_parts();
  uint64_t expected = 0;  // the first part id not seen in order from 0
  for (const auto& part : h.parts) {
    if (part.id != expected || (expected >= kept && !dense)) break;
    ++expected;
  }
  if (expected < kept || (dense && expected < h.parts.size())) {
    return Status::DataLoss("dump header: part " + std::to_string(expected) + " of the " +
                            std::string(FilterKindName(h.config.kind)) +
                            " filter is missing, which the filter always has");
  }
  return h;
}

// Whether `read` (a failed ReadConfig) is a sharded filter whose create was
// interrupted, which the import or merge that meets it finishes with its
// parameters (the error said to repeat the create, which a user of import
// may not know how to).
bool Interrupted(const Status& read, const FilterConfig& config) {
  return config.shards > 1 && internal::IsBeingCreated(read);
}

// Opens `name`, creating it with `config` if missing; an existing filter must
// have the same config, or with `same_cells`, the same kind, strategy,
// encoding, bits and hashes (a Guava file's bits fit a filter created with
// the capacity and error rate that give its m and k).
Result<std::unique_ptr<BloomFilter>> OpenOrCreate(Store& store, std::string_view name,
                                                  const FilterConfig& config, bool same_cells,
                                                  bool* created) {
  *created = false;
  auto existing = store.ReadConfig(name);
  if (existing.ok()) {
    // The shards too: a sharded filter's m and k are one shard's, and a Guava
    // file's one array written into part 0 would leave the items that hash to
    // the other shards absent.
    const bool cells_match =
        existing->kind == config.kind && existing->strategy == config.strategy &&
        existing->encoding == config.encoding && existing->geometry == config.geometry &&
        existing->shards == config.shards;
    if (!existing->SameFilterAs(config) && !(same_cells && cells_match)) {
      return Status::Conflict("filter '" + std::string(name) + "' exists with other parameters: " +
                              existing->ToString() + " (the input has " + config.ToString() + ")");
    }
    return BloomFilter::Open(store, name);
  }
  if (existing.status().code() != StatusCode::kNotFound &&
      !Interrupted(existing.status(), config)) {
    return existing.status();
  }
  Status s = store.Create(name, config);
  if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
  *created = s.ok();
  auto opened = internal::OpenMadeFilter(store, name, *created);
  if (!opened.ok()) *created = false;
  return opened;
}

// What a merge of bits (an import, a merge of filters) adds to a part's item
// count. The count means "adds that set a new cell" (docs/format.md), but
// which of a bitmap's items were new to the filter is unknowable once they
// are bits, so (docs/dump-format.md, "Item counts"):
// - counting cells: the sources' counts, since every add counts there (each
//   needs its own remove);
// - bits, into a part that held none, from one source: that source's count,
//   exactly (an export/import round trip keeps it);
// - bits otherwise: how much Guava's estimate of the part's items (from its
//   bits set) grew, at most the sources' counts. Merging what a filter holds
//   adds nothing; adds running at the same time can only make it larger.
//   Grown from the part's count where that is under half the estimate
//   before (and 16 items short): bits no count stands for (an import or
//   merge killed before its count, a Java bitmap attached) are counted now.
//   Counted from the estimate, a re-run of a killed import counted little
//   of what it wrote, and a scaling layer filled past its capacity (its rate
//   past the bound); an over-count only starts the next layer early.
struct PartCount {
  uint64_t id = 0;
  uint64_t source_items = 0;  // the sources' counts for the part, summed
  int sources = 1;            // how many sources hold this part
  uint64_t bits_before = 0;   // the part's fill before the merge
  uint64_t count_before = 0;  // the part's item count before the merge
};

// Part `id`'s statistics; a part that does not exist yet holds nothing.
Result<FilterStats> StatsOf(BloomFilter& filter, uint64_t id) {
  auto stats = filter.PartStats(id);
  if (!stats.ok() && stats.status().code() == StatusCode::kNotFound) return FilterStats{};
  return stats;
}

// Before anything is written: the fill of each part (none for a filter that
// was just created for this merge).
Status CountBefore(BloomFilter& filter, bool created, std::vector<PartCount>* parts) {
  if (created || filter.config().cell_bits() != 1) return Status::Ok();
  for (PartCount& p : *parts) {
    REDBLOOM_ASSIGN_OR_RETURN(FilterStats stats, StatsOf(filter, p.id));
    p.bits_before = stats.bits_set;
    p.count_before = stats.items_added;
  }
  return Status::Ok();
}

// After the bits are written: adds each part's share to its count, and
// the items counted to *counted (so that UndoCreate tells this call's count
// from other clients' adds, whatever fails after it: a later part's count,
// the final sync). The bits are synced first.
Status CountAfter(BloomFilter& filter, std::span<const PartCount> parts, uint64_t* counted) {
  REDBLOOM_RETURN_IF_ERROR(filter.Flush());
  const FilterConfig config = filter.config();
  for (const PartCount& p : parts) {
    uint64_t items = p.source_items;
    if (config.cell_bits() == 1 && !(p.bits_before == 0 && p.sources == 1)) {
      REDBLOOM_ASSIGN_OR_RETURN(PartSizing sizing, SizePart(config, p.id));
      REDBLOOM_ASSIGN_OR_RETURN(FilterStats stats, StatsOf(filter, p.id));
      const Geometry& g = sizing.geometry;
      const uint64_t estimated = ApproximateCount(p.bits_before, g.bits, g.hashes);
      // A count short of the estimate by more than its noise and the adds
      // that read "not new" explain: bits no count stands for. Those adds
      // are many in a filter at a high rate or past its capacity (a count
      // at 72% of the estimate at p = 0.5, 88% three times past capacity at
      // 1%), so only a count under half the estimate is taken for one.
      const uint64_t slack = std::max<uint64_t>(estimated / 2, 16);
      const bool uncounted = estimated != UINT64_MAX && p.count_before + slack < estimated;
      const uint64_t before = uncounted ? p.count_before : estimated;
      const uint64_t after = ApproximateCount(stats.bits_set, g.bits, g.hashes);
      uint64_t grown = 0;
      if (after == UINT64_MAX) {
        grown = before == UINT64_MAX ? 0 : p.source_items;  // full: unbounded estimate
      } else if (after > before) {
        grown = after - before;
      }
      items = std::min(grown, p.source_items);
    }
    if (items == 0) continue;
    // Only the count: a part that has left the filter (a window slice past
    // its window) is skipped.
    REDBLOOM_RETURN_IF_ERROR(filter.MergePartBytes(p.id, 0, std::string_view(), items));
    *counted += items;
  }
  return Status::Ok();
}

// `in` itself when it can seek back (a file), else everything it holds, read
// in bounded pieces as it arrives (a pipe): what is held is what came, never
// a size that a header claims. Imports read their input twice: once to check
// all of it before anything is written, once to write.
Result<std::istream*> Rewindable(std::istream& in, std::optional<std::istringstream>* held) {
  // Cleared below, a stream that had failed read as empty input: "the input
  // is empty" for a file that never opened.
  if (in.fail()) {
    return Status::InvalidArgument(
        "the input stream failed before it was read (a file that did not open?)");
  }
  if (in.tellg() != std::istream::pos_type(-1)) return &in;
  in.clear();
  std::string all;
  std::string piece(1 << 16, '\0');
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    all.append(piece.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return Status::Unavailable("read failed");
  held->emplace(std::move(all));
  return &held->value();
}

Status SeekTo(std::istream& in, std::istream::pos_type at) {
  in.clear();
  in.seekg(at);
  if (!in) return Status::Unavailable("cannot seek back in the input");
  return Status::Ok();
}

// A store that fails in the middle of an import may have taken some of the
// bits already: say so, unless nothing had been written.
Status ImportStopped(const Status& s, bool wrote_some) {
  if (!wrote_some) return s;
  return s.WithContext("import stopped part way; some of its bits were written");
}

// An import or merge that made its destination and then failed (a full
// disk, Redis at maxmemory, a store gone) would leave a filter holding part
// of its input, which every reader takes for the whole: the rest of the
// items read "absent". It is dropped again, as if never made, unless that
// could lose another client's adds: the name no longer holds the config
// this call made (re-made meanwhile), or the filter counts items past the
// `counted_here` this call counted (it counts its own only once every bit
// is written, so any more are another client's adds, made once the filter
// existed). Then it is left, and the error says what to do. `filter` is the
// call's handle, released first.
Status UndoCreate(Store& store, std::string_view name, std::unique_ptr<BloomFilter> filter,
                  const Status& failure, std::string_view what, uint64_t counted_here) {
  const FilterConfig made = filter->config();
  filter.reset();
  const std::string made_here =
      "'" + std::string(name) + "' was created for this " + std::string(what);
  const std::string again = "run the " + std::string(what) + " again to complete it";
  auto now = store.ReadConfig(name);
  if (now.ok() && !now->SameFilterAs(made)) {
    return failure.WithContext(made_here +
                               ", then dropped and re-made by another client, which is left as it "
                               "is");
  }
  if (now.ok()) {
    auto reopened = BloomFilter::Open(store, name);
    Result<FilterInfo> info =
        reopened.ok() ? (*reopened)->Info() : Result<FilterInfo>(reopened.status());
    if (!info.ok()) {
      return failure.WithContext(made_here +
                                 " and holds part of it, and could not be checked for other "
                                 "clients' adds (" +
                                 info.status().message() + "): " + again + ", or drop it");
    }
    if (info->items_added > counted_here) {
      return failure.WithContext(
          made_here + " and holds part of it, and other clients have added to it since (" +
          std::to_string(info->items_added - counted_here) +
          " items counted), so it is left: " + again);
    }
    // Java services sharing the key add without counting: a drop deleted
    // what they had written meanwhile (an audit: 1,000 acknowledged adds).
    if (store.OthersMayWrite(made)) {
      return failure.WithContext(
          made_here + " and holds part of it, and is left: its Java clients (strategy " +
          std::string(StrategyName(made.strategy)) +
          ") write its bits without counting them, so a drop could delete what they added "
          "since: " +
          again + ", or drop it if none of them writes '" + std::string(name) + "'");
    }
  }
  Status dropped = now.ok() ? store.Drop(name) : now.status();
  if (dropped.ok() || dropped.code() == StatusCode::kNotFound) {
    return failure.WithContext(made_here + " and dropped again, so nothing of it is left");
  }
  return failure.WithContext(made_here + " and holds part of it, but could not be dropped (" +
                             dropped.message() + "): " + again + ", or drop it");
}

// A caller's stream may have exceptions() set; this API answers in a
// Status, so the mask is off while it reads or writes the stream, and put
// back as it returns (without throwing for the state it leaves: that state
// is the caller's to read).
class NoStreamExceptions {
 public:
  explicit NoStreamExceptions(std::ios& stream) : stream_(stream), mask_(stream.exceptions()) {
    stream_.exceptions(std::ios::goodbit);
  }
  NoStreamExceptions(const NoStreamExceptions&) = delete;
  NoStreamExceptions& operator=(const NoStreamExceptions&) = delete;
  ~NoStreamExceptions() {
    try {
      stream_.exceptions(mask_);
    } catch (const std::ios_base::failure&) {
      // The mask is set before clear() throws; the state stands.
    }
  }

 private:
  std::ios& stream_;
  const std::ios::iostate mask_;
};

// Bytes left in a seekable stream.
Result<uint64_t> Remaining(std::istream& in) {
  const auto at = in.tellg();
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  REDBLOOM_RETURN_IF_ERROR(SeekTo(in, at));
  if (at == std::istream::pos_type(-1) || end == std::istream::pos_type(-1) || end < at) {
    return Status::Unavailable("cannot tell the input's length");
  }
  return static_cast<uint64_t>(end - at);
}

}  // namespace

Status ExportGuava(BloomFilter& filter, std::ostream& out) {
  NoStreamExceptions plain(out);
  REDBLOOM_RETURN_IF_ERROR(CheckOutput(out));
  // The bits are converted and written a piece at a time, as they are read:
  // memory stays bounded whatever the filter's size.
  std::string buf;
  REDBLOOM_RETURN_IF_ERROR(filter.StreamParts(
      [&](const FilterConfig& c, std::span<const BloomFilter::Part>) -> Status {
        if (c.kind != FilterKind::kPlain) {
          return Status::InvalidArgument(
              "Guava's format holds one plain bit array; '" + filter.name() + "' is a " +
              std::string(FilterKindName(c.kind)) + " filter (use --format redbloom)");
        }
        if (c.strategy != Strategy::kGuava64) {
          return Status::InvalidArgument(
              "Guava's format holds only guava64 filters; '" + filter.name() + "' uses strategy " +
              std::string(StrategyName(c.strategy)) + " (use --format redbloom)");
        }
        if (c.shards > 1) {
          return Status::InvalidArgument("Guava's format holds one bit array; '" + filter.name() +
                                         "' is sharded into " + std::to_string(c.shards) +
                                         " (use --format redbloom)");
        }
        // data_bytes() is whole words for guava64, so every piece is too.
        buf.push_back(static_cast<char>(kGuavaMitz64Ordinal));
        buf.push_back(static_cast<char>(c.geometry.hashes));
        PutBE(&buf, c.geometry.bits / 64, 4);
        return WriteAll(out, buf);
      },
      [&](uint64_t, uint64_t, std::string_view bytes) -> Status {
        buf.clear();
        for (size_t at = 0; at + 8 <= bytes.size(); at += 8) {
          PutBE(&buf, RedisBytesToGuavaWord(bytes.data() + at), 8);
        }
        return WriteAll(out, buf);
      }));
  return Flush(out);
}

Result<std::unique_ptr<BloomFilter>> ImportGuava(Store& store, std::string_view name,
                                                 std::istream& input,
                                                 const GuavaImportOptions& options) {
  // A user's name, as create takes: the store takes a rebuild's temporary
  // name too, and an import under one blocked every rebuild of its filter.
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
  NoStreamExceptions plain(input);
  const bool with_capacity = options.capacity != 0 || options.error_rate != 0;
  FilterOptions o;
  o.capacity = options.capacity;
  o.error_rate = options.error_rate;
  o.strategy = Strategy::kGuava64;
  o.encoding = options.encoding;
  // Check given values before reading anything (an unknown encoding was
  // blamed on the file: "data_loss: the Guava header: unknown encoding").
  REDBLOOM_RETURN_IF_ERROR(CheckStrategyEncoding(o.strategy, o.encoding));
  if (with_capacity) REDBLOOM_RETURN_IF_ERROR(MakeConfig(o).status());

  std::optional<std::istringstream> held;
  REDBLOOM_ASSIGN_OR_RETURN(std::istream * in, Rewindable(input, &held));
  std::string head;
  REDBLOOM_RETURN_IF_ERROR(ReadUpTo(*in, 6, &head, "the Guava header"));
  // What the input is, before whether it is whole: a text file is no
  // truncated Guava file.
  if (head.empty()) return Status::InvalidArgument("the input is empty: not a Guava writeTo file");
  const uint8_t ordinal = static_cast<uint8_t>(head[0]);
  if (ordinal != kGuavaMitz64Ordinal) {
    if (head == std::string_view(kDumpMagic, head.size())) {
      return Status::InvalidArgument(
          "not a Guava writeTo file: it begins as a redbloom dump does (use --format redbloom)");
    }
    if (ordinal == 0) {
      return Status::InvalidArgument(
          "Guava strategy ordinal 0 (MURMUR128_MITZ_32) is not supported (only 1, "
          "MURMUR128_MITZ_64, Guava's default since 2013)");
    }
    return Status::InvalidArgument("not a Guava writeTo file: its first byte, " +
                                   std::to_string(ordinal) +
                                   ", is no strategy Guava has (a file from BloomFilter.writeTo "
                                   "begins with 1, MURMUR128_MITZ_64)");
  }
  if (head.size() != 6) {
    return Status::DataLoss("input ends inside the Guava header (truncated?)");
  }
  const uint32_t k = static_cast<uint8_t>(head[1]);
  const uint64_t words = GetBE(head.data() + 2, 4);
  // Guava writes the length as a Java int; readFrom fails on a negative one.
  if (words > 0x7FFF'FFFF) {
    return Status::DataLoss("the Guava header declares a negative bit-array length (" +
                            std::to_string(static_cast<int32_t>(words)) +
                            " words): not a Guava BloomFilter");
  }
  // The declared size against what the input holds, before anything is
  // sized from it (issue #15.6: 14 bytes could ask for gigabytes).
  REDBLOOM_ASSIGN_OR_RETURN(const uint64_t held_bytes, Remaining(*in));
  if (held_bytes < words * 8) {
    return Status::DataLoss("the Guava file is truncated: its header declares " +
                            std::to_string(words) + " words (" + std::to_string(words * 8) +
                            " bytes), but " + std::to_string(held_bytes) + " bytes follow it");
  }
  if (held_bytes > words * 8) {
    return Status::InvalidArgument("unexpected bytes after the Guava bit array");
  }
  if (!with_capacity) {
    // As Guava's readFrom: the file's m and k are the filter's geometry.
    o.bits = words * 64;
    o.hashes = k;
  }
  auto made = MakeConfig(o);
  if (!made.ok()) return Status::DataLoss("the Guava header: " + made.status().message());
  const FilterConfig config = *made;
  if (words * 64 != config.geometry.bits || k != config.geometry.hashes) {
    return Status::InvalidArgument(
        "the Guava file has m=" + std::to_string(words * 64) + " bits and k=" + std::to_string(k) +
        ", but capacity " + std::to_string(o.capacity) + " and error rate " +
        FormatDouble(o.error_rate) + " give m=" + std::to_string(config.geometry.bits) +
        " and k=" + std::to_string(config.geometry.hashes) +
        "; pass the expectedInsertions and fpp the Java side used");
  }
  const auto data_start = in->tellg();
  // Guava does not store a count: it is estimated from the bits, as Guava's
  // own approximateElementCount() does, so the bits are counted first.
  uint64_t bits_set = 0;
  std::string chunk;
  const uint64_t kWordsPerRead = 8192;
  for (uint64_t w = 0; w < words; w += kWordsPerRead) {
    const uint64_t n = std::min(kWordsPerRead, words - w);
    REDBLOOM_RETURN_IF_ERROR(ReadExactly(*in, n * 8, &chunk, "the Guava bit array"));
    for (uint64_t i = 0; i < n; ++i) {
      bits_set += static_cast<uint64_t>(std::popcount(GetBE(chunk.data() + 8 * i, 8)));
    }
  }
  const uint64_t estimate = ApproximateCount(bits_set, config.geometry.bits, k);

  bool created = false;
  REDBLOOM_ASSIGN_OR_RETURN(
      auto filter, OpenOrCreate(store, name, config, /*same_cells=*/!with_capacity, &created));
  uint64_t counted = 0;  // by this call, for UndoCreate
  const Status filled = [&]() -> Status {
    std::vector<PartCount> counts = {
        {.id = 0, .source_items = estimate == UINT64_MAX ? 0 : estimate}};
    REDBLOOM_RETURN_IF_ERROR(CountBefore(*filter, created, &counts));
    // Converted and written a piece at a time: memory stays bounded whatever
    // the filter's size.
    REDBLOOM_RETURN_IF_ERROR(SeekTo(*in, data_start));
    std::string bytes;
    bool wrote_some = false;
    for (uint64_t w = 0; w < words; w += kWordsPerRead) {
      const uint64_t n = std::min(kWordsPerRead, words - w);
      REDBLOOM_RETURN_IF_ERROR(ReadExactly(*in, n * 8, &chunk, "the Guava bit array"));
      bytes.resize(n * 8);
      for (uint64_t i = 0; i < n; ++i) {
        GuavaWordToRedisBytes(GetBE(chunk.data() + 8 * i, 8), bytes.data() + 8 * i);
      }
      if (bytes.find_first_not_of('\0') == std::string::npos) continue;
      Status s = filter->MergePartBytes(0, w * 8, bytes, 0);
      if (!s.ok()) return ImportStopped(s, wrote_some && !created);
      wrote_some = true;
    }
    if (Status s = CountAfter(*filter, counts, &counted); !s.ok()) {
      return ImportStopped(s, wrote_some && !created);
    }
    return filter->Flush();
  }();
  if (!filled.ok()) {
    return created ? UndoCreate(store, name, std::move(filter), filled, "import", counted) : filled;
  }
  return filter;
}

Status ExportDump(BloomFilter& filter, std::ostream& out) {
  NoStreamExceptions plain(out);
  REDBLOOM_RETURN_IF_ERROR(CheckOutput(out));
  // Chunks address the parts' bytes laid end to end, in table order; no
  // chunk crosses from one part into the next. Each is written as it is
  // read: memory stays bounded whatever the filter's size.
  static_assert(BloomFilter::kStreamPiece % kDumpChunk == 0, "a piece is whole dump chunks");
  std::map<uint64_t, uint64_t> base;  // each part's first byte in the dump
  uint64_t chunks = 0;
  uint32_t running = 0;
  std::string frame;
  REDBLOOM_RETURN_IF_ERROR(filter.StreamParts(
      [&](const FilterConfig& c, std::span<const BloomFilter::Part> parts) -> Status {
        REDBLOOM_ASSIGN_OR_RETURN(const std::string header, EncodeDumpHeader(c, parts, &base));
        std::string buf(kDumpMagic, sizeof(kDumpMagic));
        PutBE(&buf, kDumpVersion, 4);
        PutBE(&buf, header.size(), 4);
        buf += header;
        PutBE(&buf, Crc(header), 4);
        return WriteAll(out, buf);
      },
      [&](uint64_t part, uint64_t offset, std::string_view piece) -> Status {
        for (size_t at = 0; at < piece.size(); at += kDumpChunk) {
          const std::string_view data = piece.substr(at, kDumpChunk);
          if (data.find_first_not_of('\0') == std::string_view::npos) continue;
          frame.clear();
          PutBE(&frame, base[part] + offset + at, 8);
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
        return Status::Ok();
      }));
  // End marker: offset = all ones, then the chunk count and a CRC over every
  // chunk's CRC, so a dump cut at a chunk boundary is detected too.
  std::string end;
  PutBE(&end, UINT64_MAX, 8);
  PutBE(&end, chunks, 8);
  PutBE(&end, running, 4);
  REDBLOOM_RETURN_IF_ERROR(WriteAll(out, end));
  return Flush(out);
}

namespace {

// Reads a dump's header, checking its magic, version and checksum.
Result<DumpHeader> ReadDumpHeader(std::istream& in) {
  std::string buf;
  REDBLOOM_RETURN_IF_ERROR(ReadUpTo(in, 16, &buf, "the dump header"));
  // What the input is, before whether it is whole: another kind of input
  // (exit 2), not a damaged dump, as nothing of a dump is there to have been
  // damaged. (A short text file read as a truncated dump, exit 3.)
  if (buf.empty()) return Status::InvalidArgument("the input is empty: not a redbloom dump");
  const size_t magic = std::min(buf.size(), sizeof(kDumpMagic));
  if (std::memcmp(buf.data(), kDumpMagic, magic) != 0) {
    return Status::InvalidArgument(
        "not a redbloom dump (it does not begin with RBDUMP)" +
        std::string(buf[0] == static_cast<char>(kGuavaMitz64Ordinal)
                        ? "; it begins as a Guava writeTo file does: use --format guava"
                        : ""));
  }
  if (buf.size() != 16) return Status::DataLoss("input ends inside the dump header (truncated?)");
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
  return DecodeDumpHeader(header);
}

// Where a piece of a dump's data goes: part `index` of the header's table,
// at `offset` in that part.
using ChunkSink = std::function<Status(size_t index, uint64_t offset, std::string_view bytes)>;

// Reads a dump's chunks up to and including its end marker, checking each
// chunk's place and checksum; with a sink, hands each chunk's bytes to it,
// split where one part ends and the next begins. One chunk (at most 1 MiB)
// is in memory at a time, whatever the filter's size.
Status ReadChunks(std::istream& in, const DumpHeader& h, const ChunkSink& sink) {
  std::string buf, data, crc_bytes, tail;
  uint64_t chunks = 0;
  uint32_t running = 0;
  while (true) {
    REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, 12, &buf, "a dump chunk"));
    const uint64_t off = GetBE(buf.data(), 8);
    if (off == UINT64_MAX) {
      REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, 8, &tail, "the dump end marker"));
      const uint64_t expected_chunks = GetBE(buf.data() + 8, 4) << 32 | GetBE(tail.data(), 4);
      if (expected_chunks != chunks || GetBE(tail.data() + 4, 4) != running) {
        return Status::DataLoss("dump end marker does not match its chunks");
      }
      return Status::Ok();
    }
    const uint64_t len = GetBE(buf.data() + 8, 4);
    if (len == 0 || len > kDumpChunk || off > h.data_bytes || len > h.data_bytes - off) {
      return Status::DataLoss("dump chunk at offset " + std::to_string(off) +
                              " lies outside the filter's bitmap");
    }
    const uint32_t frame_crc = Crc(std::string_view(buf).substr(0, 12));
    REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, len, &data, "a dump chunk"));
    REDBLOOM_RETURN_IF_ERROR(ReadExactly(in, 4, &crc_bytes, "a dump chunk"));
    if (GetBE(crc_bytes.data(), 4) != Crc(data, frame_crc)) {
      return Status::DataLoss("dump chunk at offset " + std::to_string(off) +
                              " fails its checksum");
    }
    running = Crc(crc_bytes, running);
    ++chunks;
    if (!sink) continue;
    // The parts' bytes lie end to end in table order.
    uint64_t base = 0, at = off;
    std::string_view rest = data;
    for (size_t i = 0; i < h.parts.size() && !rest.empty(); ++i) {
      const uint64_t size = h.part_bytes[i];
      if (at < base + size) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(rest.size(), base + size - at));
        REDBLOOM_RETURN_IF_ERROR(sink(i, at - base, rest.substr(0, n)));
        rest.remove_prefix(n);
        at += n;
      }
      base += size;
    }
  }
}

}  // namespace

Result<std::unique_ptr<BloomFilter>> ImportDump(Store& store, std::string_view name,
                                                std::istream& input) {
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));  // as ImportGuava
  NoStreamExceptions plain(input);
  std::optional<std::istringstream> held;
  REDBLOOM_ASSIGN_OR_RETURN(std::istream * in, Rewindable(input, &held));
  REDBLOOM_ASSIGN_OR_RETURN(DumpHeader h, ReadDumpHeader(*in));
  // Nothing is sized from the header's claims: the whole dump is checked
  // first, a chunk at a time (a 200-byte dump may declare a filter of
  // gigabytes, issue #15.6), then read again to write it.
  const auto data_start = in->tellg();
  REDBLOOM_RETURN_IF_ERROR(ReadChunks(*in, h, nullptr));
  // A dump ends at its end marker. Bytes after it (two dumps concatenated)
  // would otherwise be dropped while the import reported success.
  const auto after = in->peek();
  if (in->bad()) return Status::Unavailable("read failed");  // before a filter is made
  if (after != std::char_traits<char>::eof()) {
    return Status::InvalidArgument(
        "the input goes on after the dump's end marker (several dumps in one input? import each "
        "on its own); nothing was imported");
  }

  bool created = false;
  REDBLOOM_ASSIGN_OR_RETURN(auto filter,
                            OpenOrCreate(store, name, h.config, /*same_cells=*/false, &created));
  uint64_t counted = 0;  // by this call, for UndoCreate
  const Status filled = [&]() -> Status {
    std::vector<PartCount> counts;
    for (const auto& part : h.parts) counts.push_back({.id = part.id, .source_items = part.items});
    REDBLOOM_RETURN_IF_ERROR(CountBefore(*filter, created, &counts));
    REDBLOOM_RETURN_IF_ERROR(SeekTo(*in, data_start));
    Status store_error;
    bool wrote_some = false;
    Status written = ReadChunks(*in, h, [&](size_t i, uint64_t offset, std::string_view bytes) {
      store_error = filter->MergePartBytes(h.parts[i].id, offset, bytes, 0);
      if (!store_error.ok()) return store_error;
      wrote_some = true;
      return Status::Ok();
    });
    // What was written is said of a filter that was there before: one this
    // call made is dropped again (UndoCreate says so).
    wrote_some = wrote_some && !created;
    if (!store_error.ok()) return ImportStopped(store_error, wrote_some);
    if (!written.ok()) {
      // The input was checked whole before: a dump that reads differently
      // now changed meanwhile. A read that fails (an input a signal stops)
      // is said as it is.
      if (written.code() != StatusCode::kDataLoss) {
        if (created) return written;
        return written.WithContext(wrote_some ? "part of it was written" : "nothing was written");
      }
      return written.WithContext(
          created      ? "the input changed while it was imported"
          : wrote_some ? "the input changed while it was imported; part of it was written"
                       : "the input changed while it was imported; nothing was written");
    }
    // Parts with no chunk (all zeros) are created too, and every count added.
    for (const auto& part : h.parts) {
      Status s = filter->MergePartBytes(part.id, 0, std::string_view(), 0);
      if (!s.ok()) return ImportStopped(s, wrote_some);
    }
    if (Status s = CountAfter(*filter, counts, &counted); !s.ok()) {
      return ImportStopped(s, wrote_some);
    }
    return filter->Flush();
  }();
  if (!filled.ok()) {
    return created ? UndoCreate(store, name, std::move(filter), filled, "import", counted) : filled;
  }
  return filter;
}

Status Merge(Store& store, std::string_view dest, std::span<const std::string> sources,
             size_t* merged_in) {
  if (sources.empty()) return Status::InvalidArgument("merge needs at least one source filter");
  REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(dest));  // as ImportGuava
  std::vector<std::unique_ptr<BloomFilter>> filters;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string& name = sources[i];
    // Named twice, a counting filter's counters were added twice (an item
    // removed once stayed present) and its items counted twice.
    if (std::find(sources.begin(), sources.begin() + i, name) != sources.begin() + i) {
      return Status::InvalidArgument("source '" + name + "' is named twice in the merge");
    }
    auto f = BloomFilter::Open(store, name);
    if (!f.ok()) return f.status().WithContext("source '" + name + "'");
    filters.push_back(std::move(f).value());
  }
  const FilterConfig first = filters.front()->config();
  // Plain and counting filters merge when their cells line up (capacity and
  // error rate may differ if they give the same m and k). Scaling and window
  // filters must be the same filter in every parameter: layer sizes follow
  // the capacity and expansion, slice numbers the slice length.
  // Shards must match as well: a sharded filter's bits and hashes are one
  // shard's, and an unsharded filter's array merged into its part 0 alone
  // would leave the items of its other shards absent.
  auto mergeable = [&](const FilterConfig& c) {
    if (!first.one_array()) return c.SameFilterAs(first);
    return c.kind == first.kind && c.strategy == first.strategy && c.encoding == first.encoding &&
           c.geometry.bits == first.geometry.bits && c.geometry.hashes == first.geometry.hashes &&
           c.shards == first.shards;
  };
  const char* rule =
      (first.kind == FilterKind::kScaling || first.kind == FilterKind::kWindow)
          ? "scaling and window filters merge only with identical parameters"
          : "filters merge only with the same kind, strategy, encoding, shards, bits and hashes";
  for (size_t i = 1; i < filters.size(); ++i) {
    if (!mergeable(filters[i]->config())) {
      return Status::InvalidArgument(
          "cannot merge '" + sources[i] + "' (" + filters[i]->config().ToString() + ") with '" +
          sources[0] + "' (" + first.ToString() + ") into '" + std::string(dest) + "': " + rule);
    }
  }
  // Check the destination before reading any bits.
  std::unique_ptr<BloomFilter> target;
  auto existing = store.ReadConfig(dest);
  if (existing.ok()) {
    if (!mergeable(*existing)) {
      // As import and create: a destination that exists with other
      // parameters is a conflict (exit 4), not bad input.
      return Status::Conflict("cannot merge into '" + std::string(dest) + "' (" +
                              existing->ToString() + "): it differs from '" + sources[0] + "' (" +
                              first.ToString() + "); " + rule);
    }
    REDBLOOM_ASSIGN_OR_RETURN(target, BloomFilter::Open(store, dest));
  } else if (existing.status().code() != StatusCode::kNotFound &&
             !Interrupted(existing.status(), first)) {
    return existing.status();
  }

  // Sources are combined part by part here first, then merged into dest in
  // one call: bits are ORed, counters added (see BitStore::OrBits).
  std::map<uint64_t, BloomFilter::Part> merged;
  std::map<uint64_t, int> sources_of;
  std::vector<BloomFilter::Part> parts;
  size_t merging = 0;
  for (auto& f : filters) {
    if (f->name() == dest) continue;  // its cells are already there
    ++merging;
    REDBLOOM_RETURN_IF_ERROR(f->ReadParts(&parts));
    for (auto& part : parts) {
      ++sources_of[part.id];
      auto [it, fresh] = merged.try_emplace(part.id);
      BloomFilter::Part& into = it->second;
      if (fresh) {
        into = std::move(part);
        continue;
      }
      into.items += part.items;
      internal::MergeCellBytes(part.bytes, &into.bytes, first.kind == FilterKind::kCounting);
    }
  }
  bool created = false;
  if (!target) {
    Status s = store.Create(dest, first);
    if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
    created = s.ok();
    REDBLOOM_ASSIGN_OR_RETURN(target, internal::OpenMadeFilter(store, dest, created));
  }
  // The counts are added afterwards, by what the merge added (PartCount).
  std::vector<BloomFilter::Part> all;
  std::vector<PartCount> counts;
  for (auto& [id, part] : merged) {
    counts.push_back({.id = id, .source_items = part.items, .sources = sources_of[id]});
    part.items = 0;
    all.push_back(std::move(part));
  }
  uint64_t counted = 0;  // by this call, for UndoCreate
  const Status filled = [&]() -> Status {
    REDBLOOM_RETURN_IF_ERROR(CountBefore(*target, created, &counts));
    REDBLOOM_RETURN_IF_ERROR(target->MergeParts(all));
    REDBLOOM_RETURN_IF_ERROR(CountAfter(*target, counts, &counted));
    return target->Flush();
  }();
  if (!filled.ok() && created) {
    return UndoCreate(store, dest, std::move(target), filled, "merge", counted);
  }
  if (filled.ok() && merged_in != nullptr) *merged_in = merging;
  return filled;
}

}  // namespace redbloom
