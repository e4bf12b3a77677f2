// file:DIR -- the embedded default store: one memory-mapped file per filter,
// DIR/NAME.rbf, plus DIR/.NAME.parts/PART.rbf for the layers of scaling
// filters and the slices of window filters. The layout is documented in
// docs/file-format.md.
//
// Crash safety: a file's header is written once, into a temporary file that
// is fsync'ed and then link()ed to its final name, so a reader sees either no
// file or a complete, checksummed header; kill -9 can never tear it. The only
// fields that change later (item count, rebuild flag, layer count) sit outside
// the checksummed region and are updated with aligned 8-byte atomic
// operations. Bits are set with atomic word operations on a MAP_SHARED
// mapping, so several processes may add to one file at once, and a killed
// writer leaves every completed bit in the page cache.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "stores.h"
#include "word_bits.h"

namespace redbloom::internal {
namespace {

constexpr char kMagic[8] = {'R', 'E', 'D', 'B', 'L', 'O', 'O', 'M'};
constexpr uint32_t kFormatVersion = 1;
constexpr uint64_t kHeaderBytes = 4096;  // data starts page-aligned
constexpr size_t kChecksummedBytes = 124;
constexpr size_t kCountOffset = 256;
constexpr size_t kSupersededOffset = 264;
constexpr size_t kLayersOffset = 272;
constexpr std::string_view kSuffix = ".rbf";
// The main file of a window filter holds no bits; its slices are parts.
constexpr uint64_t kMainPart = UINT64_MAX;

void PutLE(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t GetLE(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Cells of the array in a file: the main array of plain, counting and
// scaling filters is part 0; a window filter's main file has none.
Result<uint64_t> CellsOf(const FilterConfig& c, uint64_t part) {
  if (part == kMainPart) {
    if (c.kind == FilterKind::kWindow) return uint64_t{0};
    part = 0;
  }
  REDBLOOM_ASSIGN_OR_RETURN(PartSizing s, SizePart(c, part));
  return s.geometry.bits;
}
uint64_t DataBytes(const FilterConfig& c, uint64_t cells) {
  return (cells * c.cell_bits() + 63) / 64 * 8;  // whole words
}

std::string ErrnoText(int err) { return std::strerror(err); }

Status IoError(const std::string& what, const std::string& path, int err) {
  if (err == ENOSPC || err == EDQUOT) {
    return Status::ResourceExhausted(what + " " + path + ": " + ErrnoText(err));
  }
  return Status::Unavailable(what + " " + path + ": " + ErrnoText(err));
}

uint32_t HeaderCrc(const uint8_t* header) {
  return static_cast<uint32_t>(crc32(0L, header, kChecksummedBytes));
}

// What a file's header holds beyond the config.
struct FileHeader {
  FilterConfig config;
  uint64_t part = kMainPart;
  uint64_t expires_at_ms = 0;
  uint64_t data_bytes = 0;
};

void EncodeHeader(const FileHeader& f, uint8_t* h) {
  const FilterConfig& c = f.config;
  std::memset(h, 0, kHeaderBytes);
  std::memcpy(h, kMagic, 8);
  PutLE(h + 8, kFormatVersion, 4);
  PutLE(h + 12, kHeaderBytes, 4);
  h[16] = static_cast<uint8_t>(c.kind);
  h[17] = static_cast<uint8_t>(c.strategy);
  h[18] = static_cast<uint8_t>(c.encoding);
  h[19] = static_cast<uint8_t>(c.cell_bits());
  PutLE(h + 20, c.geometry.hashes, 4);
  PutLE(h + 24, c.geometry.bits, 8);
  PutLE(h + 32, c.capacity, 8);
  PutLE(h + 40, std::bit_cast<uint64_t>(c.error_rate), 8);
  PutLE(h + 48, f.data_bytes, 8);
  // Flags: bit 0 capped, bit 1 geometry given (capacity and error rate are
  // derived from it). A reader that knows no bit 1 recomputes the geometry
  // from the derived n and p, finds a mismatch and refuses the file.
  PutLE(h + 56, (c.geometry.capped ? 1 : 0) | (c.geometry_given ? 2 : 0), 4);
  PutLE(h + 60, c.slices, 4);
  PutLE(h + 64, std::bit_cast<uint64_t>(c.expansion), 8);
  PutLE(h + 72, c.window_millis, 8);
  PutLE(h + 80, c.ttl_seconds, 8);
  PutLE(h + 88, f.expires_at_ms, 8);
  PutLE(h + 96, f.part, 8);
  PutLE(h + kChecksummedBytes, HeaderCrc(h), 4);
  PutLE(h + kLayersOffset, 1, 8);  // mutable: a scaling filter starts with one layer
}

Result<FileHeader> DecodeHeader(const uint8_t* h, uint64_t file_size, const std::string& path) {
  auto corrupt = [&](const std::string& why) { return Status::DataLoss(path + ": " + why); };
  if (file_size < kHeaderBytes) return corrupt("file is too short to be a redbloom filter");
  if (std::memcmp(h, kMagic, 8) != 0) return corrupt("not a redbloom filter file (bad magic)");
  const uint32_t version = static_cast<uint32_t>(GetLE(h + 8, 4));
  if (version != kFormatVersion) {
    return corrupt("format version " + std::to_string(version) +
                   " is not supported (this build reads version " + std::to_string(kFormatVersion) +
                   ")");
  }
  if (GetLE(h + kChecksummedBytes, 4) != HeaderCrc(h)) return corrupt("header checksum mismatch");
  if (GetLE(h + 12, 4) != kHeaderBytes) return corrupt("unexpected header size");

  FileHeader f;
  FilterConfig& c = f.config;
  c.kind = static_cast<FilterKind>(h[16]);
  if (FilterKindName(c.kind) == "unknown") return corrupt("unknown filter kind");
  c.strategy = static_cast<Strategy>(h[17]);
  if (StrategyName(c.strategy) == "unknown") return corrupt("unknown strategy");
  c.encoding = static_cast<Encoding>(h[18]);
  if (EncodingName(c.encoding) == "unknown") return corrupt("unknown encoding");
  c.capacity = GetLE(h + 32, 8);
  c.error_rate = std::bit_cast<double>(GetLE(h + 40, 8));
  c.geometry.hashes = static_cast<uint32_t>(GetLE(h + 20, 4));
  c.geometry.bits = GetLE(h + 24, 8);
  c.geometry.capped = (GetLE(h + 56, 4) & 1) != 0;
  c.geometry_given = (GetLE(h + 56, 4) & 2) != 0;
  c.slices = static_cast<uint32_t>(GetLE(h + 60, 4));
  c.expansion = std::bit_cast<double>(GetLE(h + 64, 8));
  c.window_millis = GetLE(h + 72, 8);
  c.ttl_seconds = GetLE(h + 80, 8);
  f.expires_at_ms = GetLE(h + 88, 8);
  f.part = GetLE(h + 96, 8);
  f.data_bytes = GetLE(h + 48, 8);
  // The geometry is derived data: recomputing it catches a header written by
  // a build whose sizing differs from ours.
  auto expected = MakeConfig(OptionsOf(c));
  if (!expected.ok() || !(*expected == c)) {
    return corrupt("stored geometry does not match its capacity and error rate");
  }
  if (h[19] != c.cell_bits()) return corrupt("unexpected cell width");
  auto cells = CellsOf(c, f.part);
  if (!cells.ok() || f.data_bytes != DataBytes(c, *cells) ||
      file_size != kHeaderBytes + f.data_bytes) {
    return corrupt("file size does not match the header (truncated?)");
  }
  return f;
}

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// A mapping (and the descriptor removes flock) that the BitStore keeps alive.
struct Mapping {
  void* base = nullptr;
  size_t size = 0;
  int fd = -1;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (base != nullptr) ::munmap(base, size);
    if (fd >= 0) ::close(fd);
  }
  uint8_t* bytes() const { return static_cast<uint8_t*>(base); }
  uint64_t* word_at(size_t offset) const { return reinterpret_cast<uint64_t*>(bytes() + offset); }
};

Status ReadFully(int fd, uint8_t* buf, size_t n, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, buf + done, n - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return IoError("cannot read", path, errno);
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status WriteFully(int fd, const uint8_t* buf, size_t n, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pwrite(fd, buf + done, n - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return IoError("cannot write", path, errno);
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

Result<FileHeader> ReadHeader(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return IoError("cannot stat", path, errno);
  std::vector<uint8_t> header(kHeaderBytes, 0);
  REDBLOOM_RETURN_IF_ERROR(ReadFully(fd, header.data(), header.size(), path));
  return DecodeHeader(header.data(), static_cast<uint64_t>(st.st_size), path);
}

void SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Opens a filter's file: kNotFound if it does not exist.
Result<int> OpenFile(std::string_view name, const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundStatus(name);
    return IoError("cannot open", path, errno);
  }
  return fd;
}

bool Expired(uint64_t expires_at_ms) { return expires_at_ms != 0 && NowMillis() >= expires_at_ms; }

class FileStore final : public Store {
 public:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}

  std::string url() const override { return "file:" + dir_; }

  Status Create(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    // A filter that expired but was never cleaned up must not block the name.
    if (auto old = ReadConfig(name); !old.ok() && old.status().code() != StatusCode::kNotFound) {
      return old.status();
    }
    FileHeader f;
    f.config = config;
    f.part = kMainPart;
    if (config.ttl_seconds != 0) f.expires_at_ms = NowMillis() + config.ttl_seconds * 1000;
    REDBLOOM_ASSIGN_OR_RETURN(uint64_t cells, CellsOf(config, kMainPart));
    f.data_bytes = DataBytes(config, cells);
    Status s = CreateFile(dir_, PathOf(name), f);
    if (s.code() == StatusCode::kAlreadyExists) {
      REDBLOOM_ASSIGN_OR_RETURN(FilterConfig existing, ReadConfig(name));
      return ExistsStatus(name, existing, config);
    }
    return s;
  }

  Result<FilterConfig> ReadConfig(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader f, ReadMain(name));
    return f.config;
  }

  Result<std::vector<std::string>> List() override {
    DIR* d = ::opendir(dir_.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) return std::vector<std::string>();
      return IoError("cannot list", dir_, errno);
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string_view file = e->d_name;
      if (file.size() <= kSuffix.size() || !file.ends_with(kSuffix)) continue;
      std::string_view name = file.substr(0, file.size() - kSuffix.size());
      if (ValidateFilterName(name).ok()) names.emplace_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    // Expired filters are removed as they are found.
    std::erase_if(names, [&](const std::string& n) {
      auto f = ReadMain(n);
      return !f.ok() && f.status().code() == StatusCode::kNotFound;
    });
    return names;
  }

  Status Drop(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    return Remove(name);
  }

  Result<std::unique_ptr<BitStore>> OpenBits(std::string_view name,
                                             const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    if (config.kind == FilterKind::kWindow) {
      return Status::InvalidArgument("a window filter has no main bit array");
    }
    return OpenArray(name, PathOf(name), config, kMainPart);
  }

  Result<std::unique_ptr<BitStore>> OpenPart(std::string_view name, const FilterConfig& config,
                                             uint64_t part, bool create) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    if (config.kind == FilterKind::kScaling && part == 0) {
      return OpenArray(name, PathOf(name), config, kMainPart);
    }
    if (config.kind != FilterKind::kScaling && config.kind != FilterKind::kWindow) {
      return Status::InvalidArgument("only scaling and window filters have parts");
    }
    const std::string path = PartPath(name, part);
    if (create && ::access(path.c_str(), F_OK) != 0) {
      REDBLOOM_ASSIGN_OR_RETURN(FileHeader main, ReadMain(name));
      if (!main.config.SameFilterAs(config)) return ConfigChangedStatus(name);
      FileHeader f;
      f.config = config;
      f.part = part;
      f.expires_at_ms = PartExpiry(config, part, main.expires_at_ms);
      REDBLOOM_ASSIGN_OR_RETURN(uint64_t cells, CellsOf(config, part));
      f.data_bytes = DataBytes(config, cells);
      const std::string parts = PartsDir(name);
      if (::mkdir(parts.c_str(), 0755) != 0 && errno != EEXIST) {
        return IoError("cannot create", parts, errno);
      }
      Status s = CreateFile(parts, path, f);
      if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
    }
    auto bits = OpenArray(name, path, config, part);
    if (!bits.ok() && bits.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("part " + std::to_string(part) + " of filter '" + std::string(name) +
                              "' does not exist");
    }
    return bits;
  }

  Result<std::vector<uint64_t>> ListParts(std::string_view name,
                                          const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader main, ReadMain(name));
    if (!main.config.SameFilterAs(config)) return ConfigChangedStatus(name);
    std::vector<uint64_t> parts;
    if (config.kind == FilterKind::kScaling) parts.push_back(0);
    const std::string dir = PartsDir(name);
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) return parts;
      return IoError("cannot list", dir, errno);
    }
    while (dirent* e = ::readdir(d)) {
      std::string_view file = e->d_name;
      if (!file.ends_with(kSuffix)) continue;
      auto part = ParseUint64(file.substr(0, file.size() - kSuffix.size()));
      if (!part.ok()) continue;
      if (Expired(PartExpiry(config, *part, main.expires_at_ms))) {
        ::unlink((dir + "/" + std::string(file)).c_str());
        continue;
      }
      parts.push_back(*part);
    }
    ::closedir(d);
    std::sort(parts.begin(), parts.end());
    return parts;
  }

  Result<uint64_t> Layers(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_ASSIGN_OR_RETURN(auto header, MapHeader(name, config));
    const uint64_t v =
        std::atomic_ref<uint64_t>(*header->word_at(kLayersOffset)).load(std::memory_order_acquire);
    return std::max<uint64_t>(1, v);
  }

  Result<uint64_t> GrowLayers(std::string_view name, const FilterConfig& config,
                              uint64_t seen) override {
    REDBLOOM_ASSIGN_OR_RETURN(auto header, MapHeader(name, config));
    std::atomic_ref<uint64_t> layers(*header->word_at(kLayersOffset));
    uint64_t now = std::max<uint64_t>(1, layers.load(std::memory_order_acquire));
    if (now != seen) return now;
    // Create the layer before publishing the count, so that whoever sees the
    // new count finds the layer. Creating is idempotent: racing growers both
    // create it (one link() wins) and exactly one compare-exchange succeeds.
    REDBLOOM_RETURN_IF_ERROR(OpenPart(name, config, seen, /*create=*/true).status());
    uint64_t expected = seen;
    layers.compare_exchange_strong(expected, seen + 1, std::memory_order_acq_rel);
    return std::max<uint64_t>(1, layers.load(std::memory_order_acquire));
  }

  Status Replace(std::string_view name, std::string_view source) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(source));
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader replacement, ReadMain(source));
    REDBLOOM_RETURN_IF_ERROR(CheckReplaceable(replacement.config));
    // Hold the old file open across the rename, to flag it afterwards.
    int old_fd = ::open(PathOf(name).c_str(), O_RDWR | O_CLOEXEC);
    FdCloser old(old_fd);
    // rename() replaces atomically: every open() sees the old or the new file.
    if (::rename(PathOf(source).c_str(), PathOf(name).c_str()) != 0) {
      return IoError("cannot rename", PathOf(source), errno);
    }
    SyncDir(dir_);
    // Handles still mapping the old file now learn it was replaced.
    if (old_fd >= 0) FlagReplaced(old_fd);
    return Status::Ok();
  }

  Status Ping() override {
    if (::access(dir_.c_str(), W_OK) != 0) return IoError("cannot write to", dir_, errno);
    return Status::Ok();
  }

 private:
  std::string PathOf(std::string_view name) const {
    return dir_ + "/" + std::string(name) + std::string(kSuffix);
  }
  std::string PartsDir(std::string_view name) const {
    return dir_ + "/." + std::string(name) + ".parts";
  }
  std::string PartPath(std::string_view name, uint64_t part) const {
    return PartsDir(name) + "/" + std::to_string(part) + std::string(kSuffix);
  }

  // Writes a complete file under a temporary name in `dir` and links it to
  // `path`; kAlreadyExists if `path` exists.
  Status CreateFile(const std::string& dir, const std::string& path, const FileHeader& f) {
    const std::string tmp = dir + "/.tmp." + std::to_string(::getpid()) + "." +
                            std::to_string(tmp_counter_.fetch_add(1));
    {
      int fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0) return IoError("cannot create", tmp, errno);
      FdCloser closer(fd);
      std::vector<uint8_t> header(kHeaderBytes);
      EncodeHeader(f, header.data());
      Status s = WriteFully(fd, header.data(), header.size(), tmp);
      // ftruncate makes the data region a sparse hole: zeros that cost no
      // disk until written.
      if (s.ok() && ::ftruncate(fd, static_cast<off_t>(kHeaderBytes + f.data_bytes)) != 0) {
        s = IoError("cannot size", tmp, errno);
      }
      if (s.ok() && ::fsync(fd) != 0) s = IoError("cannot sync", tmp, errno);
      if (!s.ok()) {
        ::unlink(tmp.c_str());
        return s;
      }
    }
    // link() fails if the name exists, so of two concurrent creators exactly
    // one wins.
    const int rc = ::link(tmp.c_str(), path.c_str());
    const int err = errno;
    ::unlink(tmp.c_str());
    if (rc != 0) {
      if (err == EEXIST) return Status::AlreadyExists(path);
      return IoError("cannot create", path, err);
    }
    SyncDir(dir);
    return Status::Ok();
  }

  // Reads the main file's header; an expired filter is removed and reported
  // as not found.
  Result<FileHeader> ReadMain(std::string_view name) {
    const std::string path = PathOf(name);
    REDBLOOM_ASSIGN_OR_RETURN(int fd, OpenFile(name, path, O_RDONLY));
    FdCloser closer(fd);
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader f, ReadHeader(fd, path));
    if (Expired(f.expires_at_ms)) {
      Status s = Remove(name);
      if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
      return NotFoundStatus(name);
    }
    return f;
  }

  Status Remove(std::string_view name) {
    const std::string path = PathOf(name);
    if (Status s = UnlinkAndFlag(path); !s.ok()) {
      return s.code() == StatusCode::kNotFound ? NotFoundStatus(name) : s;
    }
    const std::string parts = PartsDir(name);
    if (DIR* d = ::opendir(parts.c_str())) {
      while (dirent* e = ::readdir(d)) {
        if (std::string_view(e->d_name).ends_with(kSuffix)) {
          (void)UnlinkAndFlag(parts + "/" + e->d_name);
        }
      }
      ::closedir(d);
    }
    std::error_code ec;
    std::filesystem::remove_all(parts, ec);
    SyncDir(dir_);
    return Status::Ok();
  }

  // Unlinks a filter file, then sets its replaced flag through a descriptor
  // opened before the unlink: handles in any process that still map the file
  // answer kConflict from then on, and reopen (finding no filter, or the one
  // created since), instead of working on a file nobody else can see.
  static Status UnlinkAndFlag(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    FdCloser closer(fd);
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) return Status::NotFound(path);
      return IoError("cannot remove", path, errno);
    }
    if (fd >= 0) FlagReplaced(fd);
    return Status::Ok();
  }

  static void FlagReplaced(int fd) {
    void* base = ::mmap(nullptr, kHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return;
    auto* flag = reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(base) + kSupersededOffset);
    std::atomic_ref<uint64_t>(*flag).store(1, std::memory_order_release);
    ::munmap(base, kHeaderBytes);
  }

  // Maps the first page of the main file, for the layer counter.
  Result<std::shared_ptr<Mapping>> MapHeader(std::string_view name, const FilterConfig& config) {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    const std::string path = PathOf(name);
    REDBLOOM_ASSIGN_OR_RETURN(int fd, OpenFile(name, path, O_RDWR));
    FdCloser closer(fd);
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader f, ReadHeader(fd, path));
    if (!f.config.SameFilterAs(config)) return ConfigChangedStatus(name);
    auto m = std::make_shared<Mapping>();
    void* base = ::mmap(nullptr, kHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return IoError("cannot map", path, errno);
    m->base = base;
    m->size = kHeaderBytes;
    return m;
  }

  Result<std::unique_ptr<BitStore>> OpenArray(std::string_view name, const std::string& path,
                                              const FilterConfig& config, uint64_t part) {
    REDBLOOM_ASSIGN_OR_RETURN(int fd, OpenFile(name, path, O_RDWR));
    FdCloser closer(fd);
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader f, ReadHeader(fd, path));
    if (!f.config.SameFilterAs(config) || f.part != part) return ConfigChangedStatus(name);
    if (Expired(f.expires_at_ms)) {
      if (part == kMainPart) {
        Status s = Remove(name);
        if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
      } else {
        ::unlink(path.c_str());
      }
      return NotFoundStatus(name);
    }
    REDBLOOM_ASSIGN_OR_RETURN(uint64_t cells, CellsOf(config, part));

    auto mapping = std::make_shared<Mapping>();
    mapping->size = kHeaderBytes + f.data_bytes;
    void* base = ::mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return IoError("cannot map", path, errno);
    mapping->base = base;
    mapping->fd = closer.release();  // kept for flock() by removes
    WordArray a;
    a.words = mapping->word_at(kHeaderBytes);
    a.cells = cells;
    a.cell_bits = config.cell_bits();
    a.count = mapping->word_at(kCountOffset);
    a.superseded = mapping->word_at(kSupersededOffset);
    a.lock_fd = mapping->fd;
    a.remove_mutex = remove_mutex_;
    a.flush = [mapping, path]() -> Status {
      if (::msync(mapping->base, mapping->size, MS_SYNC) != 0) {
        return IoError("cannot sync", path, errno);
      }
      return Status::Ok();
    };
    a.keepalive = mapping;
    return std::unique_ptr<BitStore>(std::make_unique<WordBitStore>(std::move(a)));
  }

  std::string dir_;
  std::atomic<uint64_t> tmp_counter_{0};
  // flock() already excludes every other descriptor, in this process too; the
  // mutex only spares threads of one process the syscall contention.
  std::shared_ptr<std::mutex> remove_mutex_ = std::make_shared<std::mutex>();
};

}  // namespace

Result<std::unique_ptr<Store>> NewFileStore(std::string_view dir_view) {
  std::string dir(dir_view);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return IoError("cannot create store directory", dir, errno);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return IoError("cannot open store directory", dir, errno);
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("store path " + dir + " is not a directory");
  }
  return std::unique_ptr<Store>(std::make_unique<FileStore>(std::move(dir)));
}

}  // namespace redbloom::internal
