// file:DIR -- the embedded default store: one memory-mapped file per filter,
// DIR/NAME.rbf. The layout is documented in docs/format.md.
//
// Crash safety: the header is written once, into a temporary file that is
// fsync'ed and then link()ed to its final name, so a reader sees either no
// filter or a complete, checksummed header; kill -9 can never tear it. The only
// field that changes later, the item count, sits outside the checksummed
// region and is updated with one aligned 8-byte atomic add. Bits are set with
// atomic word operations on a MAP_SHARED mapping, so several processes may add
// to one file at once, and a killed writer leaves every completed bit in the
// page cache.
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

#include "stores.h"
#include "word_bits.h"

namespace redbloom::internal {
namespace {

constexpr char kMagic[8] = {'R', 'E', 'D', 'B', 'L', 'O', 'O', 'M'};
constexpr uint32_t kFormatVersion = 1;
constexpr uint64_t kHeaderBytes = 4096;  // data starts page-aligned
constexpr size_t kChecksummedBytes = 60;
constexpr size_t kCountOffset = 256;
constexpr std::string_view kSuffix = ".rbf";

void PutLE(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t GetLE(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t DataBytes(const FilterConfig& c) {
  return (c.geometry.bits * c.cell_bits() + 63) / 64 * 8;  // whole words
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

void EncodeHeader(const FilterConfig& c, uint8_t* h) {
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
  PutLE(h + 48, DataBytes(c), 8);
  PutLE(h + 56, c.geometry.capped ? 1 : 0, 4);
  PutLE(h + 60, HeaderCrc(h), 4);
}

Result<FilterConfig> DecodeHeader(const uint8_t* h, uint64_t file_size, const std::string& path) {
  auto corrupt = [&](const std::string& why) { return Status::DataLoss(path + ": " + why); };
  if (file_size < kHeaderBytes) return corrupt("file is too short to be a redbloom filter");
  if (std::memcmp(h, kMagic, 8) != 0) return corrupt("not a redbloom filter file (bad magic)");
  const uint32_t version = static_cast<uint32_t>(GetLE(h + 8, 4));
  if (version != kFormatVersion) {
    return corrupt("format version " + std::to_string(version) +
                   " is not supported (this build reads version " + std::to_string(kFormatVersion) +
                   ")");
  }
  if (GetLE(h + 60, 4) != HeaderCrc(h)) return corrupt("header checksum mismatch");
  if (GetLE(h + 12, 4) != kHeaderBytes) return corrupt("unexpected header size");

  FilterConfig c;
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
  // The geometry is derived data: recomputing it catches a header written by
  // a build whose sizing differs from ours.
  auto expected = GeometryFor(c.strategy, c.capacity, c.error_rate);
  if (!expected.ok() || !(*expected == c.geometry)) {
    return corrupt("stored geometry does not match its capacity and error rate");
  }
  if (h[19] != c.cell_bits()) return corrupt("unexpected cell width");
  if (GetLE(h + 48, 8) != DataBytes(c) || file_size != kHeaderBytes + DataBytes(c)) {
    return corrupt("file size does not match the header (truncated?)");
  }
  return c;
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

 private:
  int fd_;
};

// A mapping that unmaps itself; the BitStore keeps it alive.
struct Mapping {
  void* base = nullptr;
  size_t size = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (base != nullptr) ::munmap(base, size);
  }
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

class FileStore final : public Store {
 public:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}

  std::string url() const override { return "file:" + dir_; }

  Status Create(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    const std::string path = PathOf(name);
    const std::string tmp = dir_ + "/." + std::string(name) + ".tmp." + std::to_string(::getpid()) +
                            "." + std::to_string(tmp_counter_.fetch_add(1));
    {
      int fd = ::open(tmp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0) return IoError("cannot create", tmp, errno);
      FdCloser closer(fd);
      std::vector<uint8_t> header(kHeaderBytes);
      EncodeHeader(config, header.data());
      Status s = WriteFully(fd, header.data(), header.size(), tmp);
      // ftruncate makes the data region a sparse hole: zeros that cost no disk
      // until written.
      if (s.ok() && ::ftruncate(fd, static_cast<off_t>(kHeaderBytes + DataBytes(config))) != 0) {
        s = IoError("cannot size", tmp, errno);
      }
      if (s.ok() && ::fsync(fd) != 0) s = IoError("cannot sync", tmp, errno);
      if (!s.ok()) {
        ::unlink(tmp.c_str());
        return s;
      }
    }
    // link() fails if the name exists, so of two concurrent creators exactly
    // one wins and the other compares configs.
    const int rc = ::link(tmp.c_str(), path.c_str());
    const int err = errno;
    ::unlink(tmp.c_str());
    if (rc != 0) {
      if (err != EEXIST) return IoError("cannot create", path, err);
      REDBLOOM_ASSIGN_OR_RETURN(FilterConfig existing, ReadConfig(name));
      return ExistsStatus(name, existing, config);
    }
    SyncDir();
    return Status::Ok();
  }

  Result<FilterConfig> ReadConfig(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    const std::string path = PathOf(name);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return NotFoundStatus(name);
      return IoError("cannot open", path, errno);
    }
    FdCloser closer(fd);
    return ReadHeader(fd, path);
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
    return names;
  }

  Status Drop(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    const std::string path = PathOf(name);
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) return NotFoundStatus(name);
      return IoError("cannot remove", path, errno);
    }
    SyncDir();
    return Status::Ok();
  }

  Result<std::unique_ptr<BitStore>> OpenBits(std::string_view name,
                                             const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateFilterName(name));
    const std::string path = PathOf(name);
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return NotFoundStatus(name);
      return IoError("cannot open", path, errno);
    }
    FdCloser closer(fd);
    REDBLOOM_ASSIGN_OR_RETURN(FilterConfig stored, ReadHeader(fd, path));
    if (!stored.SameFilterAs(config)) return ConfigChangedStatus(name);

    auto mapping = std::make_shared<Mapping>();
    mapping->size = kHeaderBytes + DataBytes(config);
    void* base = ::mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return IoError("cannot map", path, errno);
    mapping->base = base;
    auto* bytes = static_cast<uint8_t*>(base);
    auto* words = reinterpret_cast<uint64_t*>(bytes + kHeaderBytes);
    auto* count = reinterpret_cast<uint64_t*>(bytes + kCountOffset);
    auto flush = [mapping, path]() -> Status {
      if (::msync(mapping->base, mapping->size, MS_SYNC) != 0) {
        return IoError("cannot sync", path, errno);
      }
      return Status::Ok();
    };
    return std::unique_ptr<BitStore>(std::make_unique<WordBitStore>(
        words, config.geometry.bits * config.cell_bits(), count, mapping, std::move(flush)));
  }

  Status Ping() override {
    if (::access(dir_.c_str(), W_OK) != 0) return IoError("cannot write to", dir_, errno);
    return Status::Ok();
  }

 private:
  std::string PathOf(std::string_view name) const {
    return dir_ + "/" + std::string(name) + std::string(kSuffix);
  }

  Result<FilterConfig> ReadHeader(int fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return IoError("cannot stat", path, errno);
    std::vector<uint8_t> header(kHeaderBytes, 0);
    REDBLOOM_RETURN_IF_ERROR(ReadFully(fd, header.data(), header.size(), path));
    return DecodeHeader(header.data(), static_cast<uint64_t>(st.st_size), path);
  }

  // Makes a create or drop durable; failure here loses nothing already written.
  void SyncDir() {
    int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }

  std::string dir_;
  std::atomic<uint64_t> tmp_counter_{0};
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
  if (!S_ISDIR(st.st_mode))
    return Status::InvalidArgument("store path " + dir + " is not a directory");
  return std::unique_ptr<Store>(std::make_unique<FileStore>(std::move(dir)));
}

}  // namespace redbloom::internal
