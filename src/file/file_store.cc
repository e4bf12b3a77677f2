// file:DIR -- the embedded default store: one memory-mapped file per filter,
// DIR/NAME.rbf, plus DIR/.NAME.parts/PART.rbf for the layers of scaling
// filters and the slices of window filters. The layout is documented in
// docs/file-format.md.
//
// Crash safety: a file's header is written once, into a temporary file that
// is fsync'ed and then link()ed to its final name, so a reader sees either no
// file or a complete, checksummed header; kill -9 can never tear it. The only
// fields that change later (layers made, item count, rebuild flag) sit outside
// the checksummed region and are updated with aligned 8-byte atomic
// operations. Bits are set with atomic word operations on a MAP_SHARED
// mapping, so several processes may add to one file at once, and a killed
// writer leaves every completed bit in the page cache.
//
// Disk space: a store to a mapped page whose block cannot be allocated is
// SIGBUS, not an error. So every file's blocks are reserved when it is
// created (posix_fallocate), and a full disk fails the create, cleanly;
// once a file exists, writing its bits needs no more space.
//
// Read-only use: a file that cannot be opened for writing (a read-only mount,
// permissions) is mapped read-only; checks and info work, and writes answer
// the reason the file could not be opened for writing.
#include <dirent.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <tuple>

#include "file/file_header.h"
#include "file/file_layout.h"
#include "kinds/kind_def.h"
#include "stores.h"
#include "util/errno_text.h"
#include "util/fd_above_stdio.h"
#include "util/sync_dir.h"
#include "word_bits.h"

namespace redbloom::internal {
namespace {

constexpr std::string_view kSuffix = kFilterFileSuffix;

// The errno OpenNoStdio sets for a path that is no regular file (a FIFO, a
// device, a socket, a directory); open(2) itself never sets it for a local
// path.
constexpr int kNotRegular = EMEDIUMTYPE;

// The errno OpenNoStdio sets for a file that is a symbolic link, which it
// does not follow (open(2)'s ELOOP also says a loop elsewhere in the path,
// such as in the store's own directory, which is no foreign file).
constexpr int kLinkNotFollowed = ENOLINK;

// Whether `err` says the path holds something the store never makes there
// (a symbolic link, a FIFO, a socket, a device, a directory): no retry
// changes that, so it is kDataLoss ("holding something we cannot read"),
// not a retryable kUnavailable (503 with Retry-After from redbloomd).
bool IsForeignFile(int err) { return err == kLinkNotFollowed || err == kNotRegular; }

// open(2), never onto descriptors 0-2 (util/fd_above_stdio.h). A file (not
// O_DIRECTORY) is opened only if it is a regular file and not a symbolic
// link: whoever can write the store's directory could otherwise point a
// filter's file at another directory's filter, which adds and drops would
// write and flag, or at a FIFO, whose open would hold a worker for ever.
int OpenNoStdio(const char* path, int flags, mode_t mode = 0) {
  if ((flags & O_DIRECTORY) != 0) return AboveStdio(::open(path, flags, mode));
  const int fd = AboveStdio(::open(path, flags | O_NOFOLLOW | O_NONBLOCK, mode));
  if (fd < 0) {
    // A directory opened to write, a socket, a device without its driver.
    if (errno == EISDIR || errno == ENXIO || errno == ENODEV) errno = kNotRegular;
    if (errno == ELOOP) errno = kLinkNotFollowed;  // the last component (O_NOFOLLOW)
    return fd;
  }
  struct stat st;
  const bool stated = ::fstat(fd, &st) == 0;
  const int err = errno;
  if (!stated || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = stated ? kNotRegular : err;
    return -1;
  }
  return fd;
}

// opendir(3) through OpenNoStdio: a listing's descriptor is off 0-2 too
// (another thread's output to a closed stdout would go to it meanwhile).
// `flags` adds to O_RDONLY | O_DIRECTORY | O_CLOEXEC. Null with errno set.
DIR* OpenDirNoStdio(const char* path, int flags = 0) {
  const int fd = OpenNoStdio(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | flags);
  if (fd < 0) return nullptr;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    const int err = errno;
    ::close(fd);
    errno = err;
  }
  return d;
}

// ErrnoText, with what the store's own refusals mean.
std::string WhyNot(int err) {
  if (err == kLinkNotFollowed) return "it is a symbolic link, which the store does not follow";
  if (err == kNotRegular) return "it is not a regular file";
  return ErrnoText(err);
}

// `message`, with the code a failed system call's `err` calls for.
Status ErrnoStatus(int err, std::string message) {
  // ENOMEM: no address space or memory to map the filter (a limit, or
  // overcommit off), which waiting does not cure: as a full disk, not as
  // an outage (503, "safe to retry", for ever).
  if (IsNoRoom(err) || err == ENOMEM) return Status::ResourceExhausted(std::move(message));
  if (IsForeignFile(err)) return Status::DataLoss(std::move(message));
  return Status::Unavailable(std::move(message));
}

Status IoError(const std::string& what, const std::string& path, int err) {
  return ErrnoStatus(err, what + " " + path + ": " + WhyNot(err));
}

// mmap() of `path` failed with `err`. ENOMEM is most often the process's
// count of mappings at vm.max_map_count (65,530 by default): every open
// filter file is one, each scaling layer and window slice too, and a
// service with many filters open meets it with gigabytes free. Said so, with
// what to change, rather than as "Cannot allocate memory".
Status MapError(const std::string& path, int err) {
  if (err != ENOMEM) return IoError("cannot map", path, err);
  // Read as bytes (OpenNoStdio: not onto a closed stdout, see the CLI).
  const auto read_all = [](const char* file, const auto& on_bytes) {
    const int fd = OpenNoStdio(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    std::vector<char> buf(65536);  // not on the stack: a program's may be small
    for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) > 0;) {
      on_bytes(buf.data(), static_cast<size_t>(n));
    }
    ::close(fd);
  };
  uint64_t maps = 0;
  read_all("/proc/self/maps", [&](const char* b, size_t n) {
    maps += static_cast<uint64_t>(std::count(b, b + n, '\n'));
  });
  std::string max_text;
  read_all("/proc/sys/vm/max_map_count", [&](const char* b, size_t n) { max_text.append(b, n); });
  // The packaged unit's ProcSubset=pid hides /proc/sys: then the kernel's
  // default stands in, which a raised limit only exceeds (the service's
  // recovery, which needs the reason, never ran under its own unit).
  constexpr uint64_t kKernelDefault = 65530;
  const uint64_t read_limit = std::strtoull(max_text.c_str(), nullptr, 10);
  const uint64_t limit = read_limit != 0 ? read_limit : kKernelDefault;
  if (maps + 16 >= limit) {
    return {
        StatusCode::kResourceExhausted,
        "cannot map " + path + ": the process holds " + std::to_string(maps) +
            (read_limit != 0
                 ? " of the " + std::to_string(limit) + " memory mappings vm.max_map_count allows"
                 : " memory mappings, at least the kernel's default vm.max_map_count (" +
                       std::to_string(kKernelDefault) + "; /proc/sys is hidden here)") +
            " (one per open filter file, each scaling layer and window slice included); "
            "raise vm.max_map_count, or have fewer filters open (the service's "
            "filter_cache_size)",
        StatusReason::kMappingLimit};
  }
  return IoError("cannot map", path, err);
}

// Calls `each` with the name of every entry of `d`, an open listing of the
// directory `path`, and closes it. A listing cut short (EIO, ESTALE) is an
// error, not fewer entries: a caller would take filters or parts for gone.
template <typename Fn>
Status ForEachEntry(DIR* d, const std::string& path, Fn&& each) {
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(d);
    if (e == nullptr) {
      const int err = errno;
      ::closedir(d);
      return err == 0 ? Status::Ok() : IoError("cannot list", path, err);
    }
    each(std::string_view(e->d_name));
  }
}

// A parts directory that is no directory (`link`: a symbolic link).
Status NotAPartsDir(const std::string& parts, bool link) {
  return Status::DataLoss(parts + " is not a directory" +
                          (link ? " but a symbolic link, which the store does not follow" : ""));
}

// A filter's parts directory must be a directory of its own, not a symbolic
// link: through one, dropping or re-creating the filter deleted *.rbf files
// elsewhere, and growing it made files there. Ok when it does not exist.
Status CheckPartsDir(const std::string& parts) {
  struct stat st;
  if (::lstat(parts.c_str(), &st) != 0) {
    return errno == ENOENT ? Status::Ok() : IoError("cannot read", parts, errno);
  }
  if (S_ISDIR(st.st_mode)) return Status::Ok();
  return NotAPartsDir(parts, S_ISLNK(st.st_mode));
}

// An expired filter does not exist, whether or not removing its file
// (`removal`) worked: on a read-only mount it cannot be removed, and it was
// listed while `check` and `info` failed with the mount's error.
Status ExpiredStatus(std::string_view name, const Status& removal) {
  if (removal.ok() || removal.code() == StatusCode::kNotFound) return NotFoundStatus(name);
  return Status::NotFound(
      NotFoundStatus(name).message() +
      " (it expired; its file stays, as removing it failed: " + removal.message() + ")");
}

// A file's identity: a name may come to denote another file. Its device and
// inode, and the inode's birth time where the file system keeps one (statx's
// btime; ext4, XFS): ext4 gives a freed inode number to the next new file at
// once, so once a file is closed and deleted the number alone can name its
// successor. Where there is no btime the last two are 0.
using FileId = std::tuple<uint32_t, uint32_t, uint64_t, int64_t, uint32_t>;

// The identity of `path` (of `fd` itself when `path` is empty); *changed,
// when given, receives the status-change time where there is no btime (a
// file's content and metadata changes move it), else zeros.
int IdentityOf(int fd, const std::string& path, FileId* id,
               std::pair<int64_t, uint32_t>* changed = nullptr) {
  struct statx sx {};
  const int flags = path.empty() ? AT_EMPTY_PATH : 0;
  if (::statx(path.empty() ? fd : AT_FDCWD, path.c_str(), flags,
              STATX_INO | STATX_BTIME | STATX_CTIME, &sx) != 0) {
    return errno;
  }
  const bool born = (sx.stx_mask & STATX_BTIME) != 0;
  *id = FileId{sx.stx_dev_major, sx.stx_dev_minor, sx.stx_ino, born ? sx.stx_btime.tv_sec : 0,
               born ? sx.stx_btime.tv_nsec : 0};
  if (changed != nullptr) {
    *changed = born ? std::pair<int64_t, uint32_t>{0, 0}
                    : std::pair<int64_t, uint32_t>{sx.stx_ctime.tv_sec, sx.stx_ctime.tv_nsec};
  }
  return 0;
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

// An flock() on the store directory. It orders, across processes, the steps
// that tie a filter's parts to its main file: a create clears the parts a
// vanished filter of its name left, then links its main file (exclusive); a
// drop removes the main file, then the parts (exclusive); a part is made only
// for the main file the name holds (shared). Advisory: a redbloom from before
// it takes none. kNotFound if the directory does not exist.
class DirLock {
 public:
  DirLock(const std::string& dir, int operation) {
    fd_ = OpenNoStdio(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) {
      status_ = errno == ENOENT ? Status::NotFound(dir) : IoError("cannot open", dir, errno);
      return;
    }
    while (::flock(fd_, operation) != 0) {
      if (errno == EINTR) continue;
      status_ = IoError("cannot lock", dir, errno);
      return;
    }
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  const Status& status() const { return status_; }

 private:
  int fd_ = -1;
  Status status_;
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

  WordArray array;  // the cells, pointing into the mapping
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
  return DecodeFileHeader(header.data(), static_cast<uint64_t>(st.st_size), path);
}

// For a change already made and visible (a swap, a drop): a failed sync
// cannot undo it, so the error says it was made, and that a power loss may
// undo it (a swap undone brings back the old file, and with it loses the adds
// made to the new one since).
Status SyncDirAfter(const std::string& done, const std::string& dir) {
  const int err = SyncDirErrno(dir);
  if (err == 0) return Status::Ok();
  return IoError(done + ", but a power loss may undo it: cannot sync the directory", dir, err);
}

// mkdir(), made durable in its parent: the files linked into a directory
// are only as durable as its own entry (on file systems that do not order
// metadata, such as ext2). An existing directory is left as it is.
// Modes are 0775 and, for files, 0664, less the umask: 0755 and 0644 under
// the usual 022, group-writable under 002 (a store shared by a group, its
// directory setgid), which fixed modes ruled out; never writable by others,
// even under umask 0, where any local user could clear a filter's bits.
constexpr mode_t kDirMode = 0775;
constexpr mode_t kFileMode = 0664;

Status MakeDir(const std::string& dir, const std::string& what) {
  if (::mkdir(dir.c_str(), kDirMode) != 0) {
    if (errno == EEXIST) return Status::Ok();
    return IoError("cannot create " + what, dir, errno);
  }
  const std::string parent = std::filesystem::path(dir).parent_path().string();
  // A parent this user may write but not read (a drop-box, mode 0300)
  // cannot be opened to sync: nothing more can be done there.
  if (const int err = SyncDirErrno(parent.empty() ? "." : parent); err != 0 && err != EACCES) {
    return IoError("cannot sync the directory holding " + what, dir, err);
  }
  return Status::Ok();
}

// Opens a filter's file: kNotFound if it does not exist.
Result<int> OpenFile(std::string_view name, const std::string& path, int flags) {
  int fd = OpenNoStdio(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundStatus(name);
    return IoError("cannot open", path, errno);
  }
  return fd;
}

class FileStore;

class FileParts final : public WordParts {
 public:
  // `main_id`: the main file read at open, which CheckCurrent checks is
  // still the name's, and a listing too where the handle maps no main file
  // (`mapped` false: a window, whose drop flags no mapping it has).
  FileParts(FileStore* store, std::string name, FilterConfig config, FileId main_id, bool mapped)
      : store_(store),
        name_(std::move(name)),
        config_(std::move(config)),
        main_id_(main_id),
        mapped_(mapped) {}
  Result<std::shared_ptr<WordArray>> Open(uint64_t part) override;
  Status Create(uint64_t part, uint64_t expires_at_ms) override;
  Result<std::vector<uint64_t>> List() override;
  bool ListsExisting() const override { return true; }
  Result<std::vector<uint64_t>> Existing() override;
  std::optional<PartsStamp> Stamp() override;
  Status CheckCurrent() override;

 private:
  FileStore* store_;
  const std::string name_;
  const FilterConfig config_;
  const FileId main_id_;
  const bool mapped_;
};

class FileStore final : public Store {
 public:
  FileStore(std::string dir, const StoreOptions& options)
      : Store(options.clock), dir_(std::move(dir)) {}

  std::string url() const override { return "file:" + dir_; }
  std::string directory() const override { return dir_; }
  bool OwnsPath(const std::string& path) const override {
    std::error_code ec;
    return IsFileStoreName(std::filesystem::weakly_canonical(dir_, ec),
                           std::filesystem::weakly_canonical(path, ec));
  }

  Status Create(std::string_view name, const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    REDBLOOM_RETURN_IF_ERROR(CheckUnsharded(config, url()));
    // A filter that expired but was never cleaned up must not block the name;
    // one whose file cannot be removed does (the create would meet it).
    Status unremoved;
    if (auto old = ReadMain(name, nullptr, &unremoved);
        !old.ok() && old.status().code() != StatusCode::kNotFound) {
      return old.status();
    }
    if (!unremoved.ok()) {
      return unremoved.WithContext("filter '" + std::string(name) + "' expired, and its file");
    }
    FileHeader f;
    f.config = config;
    f.part = kMainPart;
    f.expires_at_ms = FilterExpiry(clock(), config);
    REDBLOOM_ASSIGN_OR_RETURN(const Geometry geometry, FileGeometry(config, kMainPart));
    f.data_bytes = FileDataBytes(config, geometry.bits);
    // The directory appears with its first filter, not when the store is
    // opened: reading a store (list, info) creates nothing.
    REDBLOOM_RETURN_IF_ERROR(MakeDir(dir_, "store directory"));
    // A drop between "exists" and reading what exists frees the name: the
    // create is tried again, as it would have been after the drop.
    for (int attempt = 1;; ++attempt) {
      Status s;
      {
        DirLock lock(dir_, LOCK_EX);
        REDBLOOM_RETURN_IF_ERROR(lock.status());
        // Parts whose main file is gone (a drop cut short, a file deleted by
        // hand) belonged to an earlier filter of this name: a scaling filter
        // would adopt its layers, items it was never given, and one of other
        // parameters would meet them as "re-created" on every call.
        if (::access(PathOf(name).c_str(), F_OK) != 0 && errno == ENOENT) {
          // Parts that stay would be adopted: no create until they go.
          REDBLOOM_RETURN_IF_ERROR(RemoveParts(name).WithContext(
              "filter '" + std::string(name) + "' cannot be created: an earlier filter's parts"));
        }
        s = CreateFile(dir_, PathOf(name), &f, /*undo_unsynced=*/true);
      }
      if (s.code() != StatusCode::kAlreadyExists) return s;
      Result<FileHeader> existing = ReadMain(name, nullptr, &unremoved);
      if (existing.ok()) return ExistsStatus(name, existing->config, config);
      if (!unremoved.ok()) {
        return unremoved.WithContext("filter '" + std::string(name) + "' expired, and its file");
      }
      if (existing.status().code() != StatusCode::kNotFound || attempt == 3) {
        return existing.status();
      }
    }
  }

  Status Sync() override {
    const int fd = OpenNoStdio(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? Status::Ok() : IoError("cannot open", dir_, errno);
    FdCloser closer(fd);
    if (::syncfs(fd) != 0) return IoError("cannot sync the file system of", dir_, errno);
    return Status::Ok();
  }

  Result<FilterConfig> ReadConfig(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    Result<FileHeader> read = ReadMain(name);
    if (!read.ok()) return WithMissingDir(read.status());
    return read->config;
  }

  Result<std::vector<std::string>> List() override {
    DIR* d = OpenDirNoStdio(dir_.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) return std::vector<std::string>();
      return IoError("cannot list", dir_, errno);
    }
    std::vector<std::string> names;
    // (A listing cut short would make redbloomd let go of the handles of
    // the filters it lacks.)
    REDBLOOM_RETURN_IF_ERROR(ForEachEntry(d, dir_, [&](std::string_view file) {
      if (file.size() <= kSuffix.size() || !file.ends_with(kSuffix)) return;
      std::string_view name = file.substr(0, file.size() - kSuffix.size());
      if (ValidateFilterName(name).ok()) names.emplace_back(name);
    }));
    std::sort(names.begin(), names.end());
    // Expired filters are removed as they are found.
    std::erase_if(names, [&](const std::string& n) {
      auto f = ReadMain(n);
      return !f.ok() && f.status().code() == StatusCode::kNotFound;
    });
    return names;
  }

  Status Drop(std::string_view name) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    return WithMissingDir(Remove(name));
  }

  // A filter not found in a store directory that does not exist: most
  // likely a mistyped file: URL, which "does not exist" alone hid (the
  // directory is made by the first create, so its absence is no error).
  Status WithMissingDir(Status s) const {
    if (s.code() != StatusCode::kNotFound || ::access(dir_.c_str(), F_OK) == 0 || errno != ENOENT) {
      return s;
    }
    return s.WithSuffix(" (the store directory " + dir_ +
                        " does not exist: is the file: URL right? A create makes it)");
  }

  Result<std::unique_ptr<BitStore>> OpenBits(std::string_view name,
                                             const FilterConfig& config) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    std::shared_ptr<WordArray> main;
    // Which file the handle opened, for CheckCurrent: one replaced by
    // other means than redbloom's (mv, rsync) flags no mapping.
    FileId id;
    if (config.initial_parts() > 0) {
      REDBLOOM_ASSIGN_OR_RETURN(main, OpenArray(name, PathOf(name), config, kMainPart, &id));
    } else {
      // Still check that the filter exists with this config, and keep which
      // file it is: no mapping of it will be flagged when it is dropped.
      REDBLOOM_ASSIGN_OR_RETURN(FileHeader f, ReadMain(name, &id));
      if (!f.config.SameFilterAs(config)) return ConfigChangedStatus(name);
    }
    const bool mapped = main != nullptr;
    return std::unique_ptr<BitStore>(std::make_unique<WordBitStore>(
        std::make_unique<FileParts>(this, std::string(name), config, id, mapped), std::move(main)));
  }

  Status Replace(std::string_view name, std::string_view source) override {
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(name));
    REDBLOOM_RETURN_IF_ERROR(ValidateStoredName(source));
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader replacement, ReadMain(source));
    REDBLOOM_RETURN_IF_ERROR(CheckReplaceable(replacement.config));
    REDBLOOM_RETURN_IF_ERROR(CheckReplaced(name, ReadConfig(name)));
    // Under the directory lock, as every change of which file a name holds
    // is: a removal of an expired filter checks, then unlinks.
    DirLock lock(dir_, LOCK_EX);
    REDBLOOM_RETURN_IF_ERROR(lock.status());
    // Hold the old file open across the rename, to flag it afterwards; one
    // that cannot be opened to write is not replaced (see UnlinkAndFlag).
    int old_fd = OpenNoStdio(PathOf(name).c_str(), O_RDWR | O_CLOEXEC);
    if (old_fd < 0 && errno == ENOENT) return DroppedWhileRebuiltStatus(name);
    if (old_fd < 0) return CannotFlag("replace", PathOf(name), errno);
    FdCloser old(old_fd);
    // rename() replaces atomically: every open() sees the old or the new file.
    if (::rename(PathOf(source).c_str(), PathOf(name).c_str()) != 0) {
      // The replacement was dropped since it was read (a drop of the name
      // takes a rebuild's temporary too): no I/O error, exit 3.
      if (errno == ENOENT) return NotFoundStatus(source);
      return IoError("cannot rename", PathOf(source), errno);
    }
    const Status synced = SyncDirAfter("filter '" + std::string(name) + "' was swapped in", dir_);
    // Handles still mapping the old file now learn it was replaced. Not
    // before the sync: a power loss that undid the rename would leave the
    // flag on the file the name holds, which reads as damage. A kill between
    // the two leaves the old file unflagged; handles then find the new one
    // by the name's file (BloomFilter::Revalidate, which redbloomd and the
    // CLI's long-running commands call once a second).
    if (old_fd >= 0 && !FlagReplaced(old_fd)) return NotFlagged("replaced", PathOf(name), errno);
    return synced;
  }

  // Ready when the directory is writable, or does not exist yet and can be
  // made (the first create makes it), and a file can be opened.
  Status Ping() override {
    // Out of descriptors, every filter's open fails, which access() (it
    // needs none) did not tell: readiness said ready.
    if (const int fd = OpenNoStdio(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
      ::close(fd);
    } else if (errno == EMFILE || errno == ENFILE) {
      return IoError("cannot open", dir_, errno);
    }
    // A directory removed while a process has it as its working directory
    // (a relative store path) still passes access(), but nothing can be made
    // in it: ready was said, and every create failed (an audit).
    const auto removed = [](const std::string& path) {
      struct stat st {};
      return ::stat(path.c_str(), &st) == 0 && st.st_nlink == 0;
    };
    if (::access(dir_.c_str(), W_OK) == 0) {
      if (removed(dir_)) return Status::Unavailable("store directory " + dir_ + " was removed");
      return Status::Ok();
    }
    if (errno != ENOENT) return IoError("cannot write to", dir_, errno);
    const std::string parent = std::filesystem::path(dir_).parent_path().string();
    const std::string where = parent.empty() ? "." : parent;
    if (::access(where.c_str(), W_OK) != 0) {
      return IoError("cannot create store directory " + dir_ + " in", where, errno);
    }
    if (removed(where)) {
      return Status::Unavailable("cannot create store directory " + dir_ + ": " + where +
                                 " was removed");
    }
    return Status::Ok();
  }

  // For FileParts.
  // kNotFound if the name no longer holds main file `id`, kConflict if it
  // holds another.
  Status CheckStillNamed(std::string_view name, const FileId& id) const {
    FileId now;
    // Only a name that is gone is a filter that is gone: a stat refused
    // (EACCES, ENOMEM) answered "not found" for a filter that is there.
    if (const int err = IdentityOf(-1, PathOf(name), &now); err == ENOENT) {
      return NotFoundStatus(name);
    } else if (err != 0) {
      return IoError("cannot stat", PathOf(name), err);
    }
    if (now != id) return ConfigChangedStatus(name);
    return Status::Ok();
  }

  Result<std::shared_ptr<WordArray>> OpenPart(std::string_view name, const FilterConfig& config,
                                              uint64_t part) {
    if (part == 0 && config.initial_parts() > 0) {
      return OpenArray(name, PathOf(name), config, kMainPart);
    }
    REDBLOOM_RETURN_IF_ERROR(CheckPartsDir(PartsDir(name)));
    auto a = OpenArray(name, PartPath(name, part), config, part);
    if (!a.ok() && a.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("part " + std::to_string(part) + " of filter '" + std::string(name) +
                              "' does not exist");
    }
    return a;
  }

  // Part `part` of the filter whose main file was `opened` when the handle
  // read it: a part made in whichever filter has the name now went into one
  // dropped and made again alike since (a scaling handle's next layer, above
  // the new filter's first: data_loss for it until dropped).
  Status CreatePart(std::string_view name, const FilterConfig& config, const FileId& opened,
                    uint64_t part, uint64_t expires_at_ms) {
    if (part == 0 && config.initial_parts() > 0) return Status::Ok();
    const std::string path = PartPath(name, part);
    const bool dense = KindOf(config.kind).dense_parts;
    if (!dense && ::access(path.c_str(), F_OK) == 0) return Status::Ok();
    // Read before the lock is taken: an expired filter is removed, which
    // takes the lock exclusively.
    FileId main_id;
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader main, ReadMain(name, &main_id));
    if (!main.config.SameFilterAs(config) || main_id != opened) return ConfigChangedStatus(name);
    DirLock lock(dir_, LOCK_SH);
    REDBLOOM_RETURN_IF_ERROR(lock.status());
    REDBLOOM_RETURN_IF_ERROR(CheckStillNamed(name, opened));
    // A dense part found made is recorded too: its maker may have died
    // before recording it.
    if (dense && ::access(path.c_str(), F_OK) == 0) return RecordMade(name, part);
    FileHeader f;
    f.config = config;
    f.part = part;
    f.expires_at_ms = CapExpiry(expires_at_ms, main.expires_at_ms);
    REDBLOOM_ASSIGN_OR_RETURN(const Geometry geometry, FileGeometry(config, part));
    f.data_bytes = FileDataBytes(config, geometry.bits);
    const std::string parts = PartsDir(name);
    REDBLOOM_RETURN_IF_ERROR(MakeDir(parts, "parts directory"));
    REDBLOOM_RETURN_IF_ERROR(CheckPartsDir(parts));
    Status s = CreateFile(parts, path, &f);
    if (!s.ok() && s.code() != StatusCode::kAlreadyExists) return s;
    // (An existing file's name was synced by CreateFile.)
    return dense ? RecordPart(name, part) : Status::Ok();
  }

  // The numbers of the part files in NAME's parts directory, as they are
  // named: one directory read, nothing opened (no expiry read, nothing
  // removed). No directory is no parts.
  Result<std::vector<uint64_t>> PartFiles(std::string_view name) {
    std::vector<uint64_t> parts;
    const std::string dir = PartsDir(name);
    // Not through a symbolic link: another directory's parts would read as
    // this filter's (CheckPartsDir).
    DIR* d = OpenDirNoStdio(dir.c_str(), O_NOFOLLOW);
    if (d == nullptr) {
      if (errno == ENOENT) return parts;
      if (errno == ELOOP || errno == ENOTDIR) return NotAPartsDir(dir, errno == ELOOP);
      return IoError("cannot list", dir, errno);
    }
    REDBLOOM_RETURN_IF_ERROR(ForEachEntry(d, dir, [&](std::string_view file) {
      if (!file.ends_with(kSuffix)) return;
      // Only the names the store writes: ParseUint64 also reads "01" and
      // "1e0" as 1, and a stray copy under such a name was listed as a
      // second part 1 (the filter then read as having lost a layer).
      const std::string_view stem = file.substr(0, file.size() - kSuffix.size());
      auto part = ParseUint64(stem);
      if (part.ok() && std::to_string(*part) == stem) parts.push_back(*part);
    }));
    return parts;
  }

  // A lost layer is told by reading the main file and then listing the
  // parts: a drop and a create by others in between can read as one, and
  // the main file's identity cannot always tell (an inode reused at once,
  // created within the same clock tick: the DELETE and PUT of a churning
  // client). A real loss stays at three looks in a row; a race does not.
  Result<std::vector<uint64_t>> ListParts(std::string_view name, const FilterConfig& config) {
    for (int look = 1;; ++look) {
      Result<std::vector<uint64_t>> parts = ListPartsOnce(name, config);
      if (parts.ok() || parts.status().code() != StatusCode::kDataLoss || look == 3) return parts;
    }
  }

  Result<std::vector<uint64_t>> ListPartsOnce(std::string_view name, const FilterConfig& config) {
    FileId main_id;
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader main, ReadMain(name, &main_id));
    if (!main.config.SameFilterAs(config)) return ConfigChangedStatus(name);
    std::vector<uint64_t> parts;
    if (config.initial_parts() > 0) parts.push_back(0);
    // No directory is no parts yet, or all of them lost: the record below
    // tells which.
    REDBLOOM_ASSIGN_OR_RETURN(std::vector<uint64_t> files, PartFiles(name));
    for (uint64_t part : files) {
      const std::string path = PartPath(name, part);
      ExpiryKey key;
      auto expires_at = PartExpiry(name, path, &key);
      if (!expires_at.ok() && expires_at.status().code() == StatusCode::kNotFound) continue;
      if (expires_at.ok() && Expired(clock(), *expires_at)) {
        (void)UnlinkAndFlag(path);
        // Forgotten with its file: a window filter makes a slice file per
        // slice, and their entries only went when there were 4096.
        std::lock_guard lock(expiry_mu_);
        expiry_.erase(key);
        continue;
      }
      parts.push_back(part);
    }
    // Every part expires with the filter at the latest: a listing the
    // filter's expiry cut (the clock read per file, or another process
    // deleting expired files meanwhile) is of an expired filter, not one
    // with a gap in its layers (data_loss).
    if (main.expires_at_ms != 0 && Expired(clock(), main.expires_at_ms)) {
      return NotFoundStatus(name);
    }
    std::sort(parts.begin(), parts.end());
    // Dense parts recorded in the main file but missing from the directory
    // were lost (a file deleted): their items would read as absent. A gap
    // below the last part is the kind's to report; this is the loss of the
    // last ones, which a listing alone cannot tell from parts never made.
    // (A stray file named for the last part number must not wrap this to 0:
    // the kind reports a part past its limit.)
    const uint64_t listed = parts.empty() ? 0 : parts.back() + (parts.back() == UINT64_MAX ? 0 : 1);
    // A gap below the last part, while a drop removes the parts one by one
    // (or a create by another client makes them): the filter went since
    // the header was read, not a layer. One that stays is the kind's to
    // report.
    if (KindOf(config.kind).dense_parts && parts.size() < listed && listed <= kMaxLayers) {
      REDBLOOM_RETURN_IF_ERROR(CheckStillNamed(name, main_id));
      for (uint64_t i = 0; i < parts.size(); ++i) {
        if (parts[i] != i) {
          return Status::DataLoss(std::string(FilterKindName(config.kind)) + " filter '" +
                                  std::string(name) + "' has lost layer " + std::to_string(i) +
                                  " of " + std::to_string(listed) + ": " + PartPath(name, i) +
                                  " is gone");
        }
      }
    }
    if (KindOf(config.kind).dense_parts && main.parts_made > listed) {
      // Unless the filter was dropped, re-created or expired since the
      // header was read: then its parts went with it.
      REDBLOOM_RETURN_IF_ERROR(CheckStillNamed(name, main_id));
      if (Expired(clock(), main.expires_at_ms)) return NotFoundStatus(name);
      return Status::DataLoss(std::string(FilterKindName(config.kind)) + " filter '" +
                              std::string(name) + "' has lost layer " + std::to_string(listed) +
                              " of " + std::to_string(main.parts_made) + ": " +
                              PartPath(name, listed) + " is gone, though " + PathOf(name) +
                              " records that it was made");
    }
    // Layers made but not recorded (a maker killed between its file and the
    // record; nothing else raises it) are recorded now: a later loss of the
    // last of them would read as a smaller filter, its items absent. Only an
    // unbroken chain within the limit whose unrecorded files' headers are
    // those layers': a stray file (a gap, a copy at the next number) is the
    // kind's to report, and recorded it would stay data_loss once removed.
    // Best effort, under the lock a maker holds, and once per main file and
    // layer count in this process: a read-only mount, or a reader without
    // write access, still answers, without a lock and a sync every check.
    if (KindOf(config.kind).dense_parts && main.parts_offset != 0 && listed >= 2 &&
        main.parts_made < listed && listed <= kMaxLayers && parts.size() == listed &&
        FirstRecordAttempt(main_id, listed) && ::access(PathOf(name).c_str(), W_OK) == 0 &&
        LayersAre(name, config, std::max<uint64_t>(main.parts_made, 1), listed)) {
      DirLock lock(dir_, LOCK_SH);
      if (lock.status().ok() && CheckStillNamed(name, main_id).ok()) {
        (void)RecordMade(name, listed - 1);
      }
    }
    return parts;
  }

  // The parts directory's identity and modification time: every link and
  // unlink in it (a layer made, deleted or copied in, by any build of any
  // process) moves it.
  std::optional<PartsStamp> PartsStampOf(std::string_view name) const {
    struct stat st = {};
    if (::stat(PartsDir(name).c_str(), &st) != 0) {
      if (errno == ENOENT) return PartsStamp{.exists = false, .settled = true};
      return std::nullopt;
    }
    timespec now = {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const auto ns = [](const timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; };
    // File systems stamp with the kernel's clock tick (ext4: up to 10 ms
    // apart): a change within this of the stamp could leave it as it was.
    constexpr int64_t kTickNs = 50'000'000;
    return PartsStamp{.exists = true,
                      .dev = static_cast<uint64_t>(st.st_dev),
                      .ino = static_cast<uint64_t>(st.st_ino),
                      .mtime_ns = ns(st.st_mtim),
                      .settled = ns(now) - ns(st.st_mtim) > kTickNs};
  }

  bool FirstRecordAttempt(const FileId& main, uint64_t listed) {
    std::lock_guard lock(expiry_mu_);
    if (record_attempts_.size() > 4096) record_attempts_.clear();
    return record_attempts_.emplace(main, listed).second;
  }

  // Whether part files `from` .. `to` - 1 of `name` each hold that part of
  // this filter.
  bool LayersAre(std::string_view name, const FilterConfig& config, uint64_t from, uint64_t to) {
    for (uint64_t p = from; p < to; ++p) {
      const std::string path = PartPath(name, p);
      const int fd = OpenNoStdio(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return false;
      FdCloser closer(fd);
      auto header = ReadHeader(fd, path);
      if (!header.ok() || header->part != p || !header->config.SameFilterAs(config)) return false;
    }
    return true;
  }

 private:
  std::string PathOf(std::string_view name) const {
    return dir_ + "/" + std::string(name) + std::string(kSuffix);
  }
  std::string PartsDir(std::string_view name) const { return dir_ + "/" + PartsDirName(name); }
  std::string PartPath(std::string_view name, uint64_t part) const {
    return PartsDir(name) + "/" + std::to_string(part) + std::string(kSuffix);
  }

  // A part's expiry, from its header; headers never change, so it is read
  // once per file (ListParts runs on every check of a scaling filter). The
  // key is the file's identity, and its status-change time where there is
  // no btime: a new slice or layer judged by a deleted one's expiry would be
  // deleted with its items (a header read more per write is the price).
  using ExpiryKey = std::pair<FileId, std::pair<int64_t, uint32_t>>;
  Result<uint64_t> PartExpiry(std::string_view name, const std::string& path, ExpiryKey* key) {
    ExpiryKey& id = *key;
    if (const int err = IdentityOf(-1, path, &id.first, &id.second); err != 0) {
      if (err == ENOENT) return NotFoundStatus(name);
      return IoError("cannot stat", path, err);
    }
    {
      std::lock_guard lock(expiry_mu_);
      if (auto it = expiry_.find(id); it != expiry_.end()) return it->second;
    }
    REDBLOOM_ASSIGN_OR_RETURN(int fd, OpenFile(name, path, O_RDONLY));
    FdCloser closer(fd);
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader f, ReadHeader(fd, path));
    std::lock_guard lock(expiry_mu_);
    if (expiry_.size() > 4096) expiry_.clear();
    expiry_[id] = f.expires_at_ms;
    return f.expires_at_ms;
  }

  // `path`, found made in `dir` by another creator (one racing this one, or
  // an earlier create that died or failed to sync the directory): answered
  // kAlreadyExists only once its name is durable, as this call's own file
  // would be, since the caller goes on to use it.
  static Status Existing(const std::string& dir, const std::string& path) {
    if (const int err = SyncDirErrno(dir); err != 0) {
      return IoError("cannot sync the directory of", path, err);
    }
    return Status::AlreadyExists(path);
  }

  // Dense part `part` of `name`, whose file exists, recorded made (after its
  // name is durable, so that the record never leads a file a power loss
  // could take).
  Status RecordMade(std::string_view name, uint64_t part) {
    if (const int err = SyncDirErrno(PartsDir(name)); err != 0) {
      return IoError("cannot sync", PartsDir(name), err);
    }
    return RecordPart(name, part);
  }

  // Whether bytes [from, to) of `fd` read as zeros (false if they cannot be
  // read).
  static bool CellsAllZero(int fd, uint64_t from, uint64_t to) {
    std::vector<char> buf(size_t{1} << 20);
    for (uint64_t at = from; at < to;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), to - at));
      const ssize_t got = ::pread(fd, buf.data(), want, static_cast<off_t>(at));
      if (got <= 0) return false;
      if (std::any_of(buf.begin(), buf.begin() + got, [](char c) { return c != 0; })) return false;
      at += static_cast<uint64_t>(got);
    }
    return true;
  }

  // Writes a complete file, unnamed (O_TMPFILE) or under a temporary name in
  // `dir`, and links it to `path`; kAlreadyExists if `path` exists. With
  // `undo_unsynced` (a caller holding the directory lock exclusively), a
  // file linked whose name could not be made durable is unlinked again.
  Status CreateFile(const std::string& dir, const std::string& path, FileHeader* f,
                    bool undo_unsynced = false) {
    // Made already (by a racing creator, or before): reserving a second
    // full copy could fail for want of space, a false "no space" for a
    // filter that exists.
    if (::access(path.c_str(), F_OK) == 0) return Existing(dir, path);
    std::vector<uint8_t> header(kHeaderBytes);
    REDBLOOM_RETURN_IF_ERROR(EncodeFileHeader(f, header.data()));
    // An unnamed file leaves nothing behind when the process dies before
    // linking it (a named one stayed, at the filter's full size, for ever).
    // File systems without O_TMPFILE, or no /proc to link it through, take
    // a temporary name: unique across every store object of this process
    // (several may share a directory) and, by the pid, across processes. N
    // is random at each attempt, and a name taken is passed over: counted
    // from 0 (or from any name seen), names made in advance by whoever could
    // write the directory refused every create with "File exists".
    static const bool proc_fds = ::access("/proc/self/fd", X_OK) == 0;
    std::string tmp;
    int fd = proc_fds ? OpenNoStdio(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, kFileMode) : -1;
    const bool unnamed = fd >= 0;
    if (!unnamed && proc_fds && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
      return IoError("cannot create", path + " (in " + dir + ")", errno);
    }
    thread_local std::mt19937_64 rng{std::random_device{}()};
    for (int attempt = 0; fd < 0 && attempt < 16; ++attempt) {
      tmp = dir + "/.tmp." + std::to_string(::getpid()) + "." + std::to_string(rng());
      fd = OpenNoStdio(tmp.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, kFileMode);
      if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) return IoError("cannot create", path + " (in " + tmp + ")", errno);
    FdCloser closer(fd);
    const uint64_t size = kHeaderBytes + f->data_bytes;
    Status s = WriteFully(fd, header.data(), header.size(), path);
    if (s.ok() && ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      s = IoError("cannot size", path, errno);
    }
    // Reserve every block now: a page of a sparse file that cannot be
    // allocated later is SIGBUS for whoever stores to it through the
    // mapping (issue #15.3). The file is still private to this call, so
    // glibc's fallback for file systems without fallocate (writing a zero
    // into each block) cannot race a writer.
    bool no_room = false;
    if (s.ok()) {
      const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
      if (err != 0) {
        no_room = IsNoRoom(err);
        s = IoError("cannot reserve " + std::to_string(size) + " bytes for", path, err);
      }
    }
    if (s.ok() && ::fsync(fd) != 0) s = IoError("cannot sync", path, errno);
    if (!s.ok()) {
      if (!unnamed) ::unlink(tmp.c_str());
      // A racing creator that won while this one reserved took the room.
      if (no_room && ::access(path.c_str(), F_OK) == 0) return Existing(dir, path);
      return s;
    }
    // link() fails if the name exists, so of two concurrent creators exactly
    // one wins.
    const std::string from = unnamed ? "/proc/self/fd/" + std::to_string(fd) : tmp;
    const int rc =
        ::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, path.c_str(), unnamed ? AT_SYMLINK_FOLLOW : 0);
    const int err = errno;
    if (!unnamed) ::unlink(tmp.c_str());
    if (rc != 0) {
      if (err == EEXIST) return Existing(dir, path);
      return IoError("cannot create", path, err);
    }
    // A create is not acknowledged before its name is durable: a crash would
    // otherwise lose a filter its creator went on to use.
    if (const int sync_err = SyncDirErrno(dir); sync_err != 0) {
      Status failed = IoError("cannot sync the directory of", path, sync_err);
      if (!undo_unsynced) return failed;  // a part: a racing maker may use it already
      // Nor is it left, where that is safe: every caller reads a failed
      // create as nothing made, so an import left an empty filter it said it
      // had dropped, and a rebuild its temporary filter, which refused the
      // next rebuild (both out of descriptors, an audit). Under the exclusive
      // directory lock no create or drop has taken the name since, but an
      // open takes no lock: another process may have opened the file, added
      // to it and been answered (and exited). A write lease is granted only
      // while no other process has the file open or mapped, and holds off
      // any open until it is released: under one, a file whose cells are
      // all still zero was written by nobody, and is unlinked (and flagged
      // replaced, for an open held off). Else it stays, as a retry finds it.
      if (::fcntl(fd, F_SETLEASE, F_WRLCK) != 0) {
        return failed.WithSuffix(
            "; the new filter's file stays (it may be in use: " + WhyNot(errno) + ")");
      }
      if (!CellsAllZero(fd, kHeaderBytes, kHeaderBytes + f->data_bytes)) {
        (void)::fcntl(fd, F_SETLEASE, F_UNLCK);
        return failed.WithSuffix("; the new filter's file stays: another process added to it");
      }
      const bool removed = ::unlink(path.c_str()) == 0;
      const int unlink_err = errno;
      if (removed) {
        const uint64_t flag = 1;
        (void)::pwrite(fd, &flag, sizeof(flag), static_cast<off_t>(f->superseded_offset));
      }
      (void)::fcntl(fd, F_SETLEASE, F_UNLCK);
      if (!removed) {
        return failed.WithSuffix("; the new filter's file stays, as removing it failed too: " +
                                 WhyNot(unlink_err));
      }
      return failed.WithSuffix("; nothing was created");
    }
    return Status::Ok();
  }

  // Reads the main file's header; an expired filter is removed and reported
  // as not found. `id`, when given, receives the file's identity.
  // `unremoved`, when given, receives why an expired filter's file could not
  // be removed (its status stays not_found): a create must not take such a
  // name for free, nor retry it as if a drop had raced it.
  Result<FileHeader> ReadMain(std::string_view name, FileId* id = nullptr,
                              Status* unremoved = nullptr) {
    const std::string path = PathOf(name);
    for (int attempt = 0;; ++attempt) {
      REDBLOOM_ASSIGN_OR_RETURN(int fd, OpenFile(name, path, O_RDONLY));
      FdCloser closer(fd);
      REDBLOOM_ASSIGN_OR_RETURN(FileHeader f, ReadHeader(fd, path));
      const bool expired = Expired(clock(), f.expires_at_ms);
      FileId file;
      if (id != nullptr || expired) {
        if (const int err = IdentityOf(fd, "", &file); err != 0) {
          return IoError("cannot stat", path, err);
        }
        if (id != nullptr) *id = file;
      }
      if (!expired) return f;
      // Removed only if the name still holds the file read: by now it may
      // hold a filter made since, which this must neither remove nor miss.
      Status s = Remove(name, &file);
      if (s.code() == StatusCode::kConflict && attempt < 3) continue;
      if (unremoved != nullptr && !s.ok() && s.code() != StatusCode::kNotFound) *unremoved = s;
      return ExpiredStatus(name, s);
    }
  }

  // Raises the main file's record of its dense parts to part + 1, once the
  // part's file exists (made, synced and linked): the record may lag the
  // parts (a maker killed between the two), never lead them. Called with the
  // directory lock shared, after CheckStillNamed: the name still holds the
  // main file this part belongs to.
  Status RecordPart(std::string_view name, uint64_t part) {
    const std::string path = PathOf(name);
    REDBLOOM_ASSIGN_OR_RETURN(int fd, OpenFile(name, path, O_RDWR));
    FdCloser closer(fd);
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader f, ReadHeader(fd, path));
    if (f.parts_offset == 0) return Status::Ok();  // a header with no room for it
    if (!WithHeaderWord(fd, f.parts_offset, [&](std::atomic_ref<uint64_t> made) {
          uint64_t seen = made.load(std::memory_order_acquire);
          while (seen < part + 1 &&
                 !made.compare_exchange_weak(seen, part + 1, std::memory_order_acq_rel)) {
          }
        })) {
      return IoError("cannot map", path, errno);
    }
    return Status::Ok();
  }

  // Must not be called with a DirLock held: it takes one exclusively. With
  // `only` (an expired filter's main file, as read before the lock), removes
  // nothing unless the name still holds that file: kNotFound if it holds
  // none, kConflict if another (a new filter of the name, made by a process
  // that removed the expired one first, or swapped in by a rebuild).
  Status Remove(std::string_view name, const FileId* only = nullptr) {
    DirLock lock(dir_, LOCK_EX);
    if (lock.status().code() == StatusCode::kNotFound) return NotFoundStatus(name);
    REDBLOOM_RETURN_IF_ERROR(lock.status());
    if (only != nullptr) REDBLOOM_RETURN_IF_ERROR(CheckStillNamed(name, *only));
    const std::string path = PathOf(name);
    if (Status s = UnlinkAndFlag(path); !s.ok()) {
      if (s.code() != StatusCode::kNotFound) return s;
      // No filter, but maybe the parts a drop cut short left: they go too.
      REDBLOOM_RETURN_IF_ERROR(RemoveParts(name).WithContext(
          "filter '" + std::string(name) + "' does not exist, but an earlier one's parts"));
      return NotFoundStatus(name);
    }
    // The filter is gone (its main file flagged, so its handles reopen), and
    // its unlink is synced all the same; a part that stays is said, and
    // blocks a create of the name until it goes.
    const Status parts = RemoveParts(name).WithContext("filter '" + std::string(name) +
                                                       "' was dropped, but its parts");
    // An expired filter that a power loss brings back is expired still, and
    // removed again by its next reader: its removal waits for no sync of the
    // directory (the next create's sync makes the unlink durable too). One
    // sync per filter, under the lock that creates take, made a listing that
    // met 2,000 expired filters take 2.7-3.2 s here (1.5-1.7 s without), and
    // 9.6 s while other processes synced.
    if (only != nullptr) return parts;
    const Status synced = SyncDirAfter("filter '" + std::string(name) + "' was dropped", dir_);
    REDBLOOM_RETURN_IF_ERROR(parts);
    return synced;
  }

  // Removes a filter's parts directory; handles still mapping a part learn
  // it is gone (UnlinkAndFlag). A part it cannot flag stays, and so does the
  // directory: unlinked unflagged, it would live on in the processes that
  // map it (a window's slices have no main file to tell them), and a part
  // left behind would be adopted by the next filter of the name.
  Status RemoveParts(std::string_view name) {
    const std::string parts = PartsDir(name);
    if (!CheckPartsDir(parts).ok()) {
      // Not the filter's: a link goes (unlink does not follow it), and
      // nothing it points at.
      if (::unlink(parts.c_str()) != 0 && errno != ENOENT) {
        return IoError("cannot remove", parts, errno);
      }
      return Status::Ok();
    }
    DIR* d = OpenDirNoStdio(parts.c_str());
    if (d == nullptr) {
      return errno == ENOENT ? Status::Ok() : IoError("cannot list", parts, errno);
    }
    Status first;
    const Status listed = ForEachEntry(d, parts, [&](std::string_view file) {
      if (!file.ends_with(kSuffix)) return;
      Status s = UnlinkAndFlag(parts + "/" + std::string(file));
      if (!s.ok() && s.code() != StatusCode::kNotFound && first.ok()) first = std::move(s);
    });
    REDBLOOM_RETURN_IF_ERROR(first);
    REDBLOOM_RETURN_IF_ERROR(listed);
    std::error_code ec;
    std::filesystem::remove_all(parts, ec);
    if (ec) return IoError("cannot remove", parts, ec.value());
    return Status::Ok();
  }

  // Unlinks a filter file, then sets its replaced flag through a descriptor
  // opened before the unlink: handles in any process that still map the file
  // answer kConflict from then on, and reopen (finding no filter, or the one
  // created since), instead of working on a file nobody else can see.
  // A file this process cannot open to write (another user's, or no
  // descriptor left) is not removed: unlinked unflagged, it would live on in
  // every process that maps it, which would go on answering from it and
  // adding to it (false negatives, lost adds) while a new filter of the name
  // took the others' adds.
  static Status UnlinkAndFlag(const std::string& path) {
    const int fd = OpenNoStdio(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return Status::NotFound(path);
      return CannotFlag("remove", path, errno);
    }
    FdCloser closer(fd);
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) return Status::NotFound(path);
      return IoError("cannot remove", path, errno);
    }
    if (!FlagReplaced(fd)) return NotFlagged("removed", path, errno);
    return Status::Ok();
  }

  static Status CannotFlag(const char* verb, const std::string& path, int err) {
    return ErrnoStatus(err, std::string("will not ") + verb + " " + path +
                                ": it cannot be opened to flag it for the processes that map it, "
                                "which would go on using it: " +
                                WhyNot(err));
  }

  // The file was removed or replaced, but FlagReplaced failed (`err`).
  static Status NotFlagged(const char* done, const std::string& path, int err) {
    return Status::Unavailable(std::string(done) + " " + path +
                               ", but could not flag the old file for the processes that map it "
                               "(they use it until they reopen it): " +
                               internal::ErrnoText(err));
  }

  // False (errno set) if the flag could not be set. A file whose header
  // does not read (corrupt) has none, and no handle could open it.
  // Written, not mapped: a process at its limit of mappings (see MapError)
  // must still flag what it drops or replaces (a DELETE there removed the
  // file and left it unflagged, so handles mapping it went on using it).
  // The word goes from 0 to 1, a single byte, which a reader of the mapped
  // word cannot see torn.
  static bool FlagReplaced(int fd) {
    auto header = ReadHeader(fd, "");
    if (!header.ok()) return true;
    const uint64_t flag = 1;
    const auto at = static_cast<off_t>(header->superseded_offset);
    return ::pwrite(fd, &flag, sizeof(flag), at) == static_cast<ssize_t>(sizeof(flag));
  }

  // Runs `update` on the mutable 8-byte header word at `offset` of the file
  // open as `fd`, through a shared mapping of its header, as every process
  // changes those words. False (errno set) if the header cannot be mapped.
  template <typename Update>
  static bool WithHeaderWord(int fd, size_t offset, Update update) {
    void* base = ::mmap(nullptr, kHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return false;
    update(std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(base) + offset)));
    ::munmap(base, kHeaderBytes);
    return true;
  }

  // A file with holes (written by a version that created files sparse, or
  // copied by a tool that punches holes, as cp does) gets its blocks now:
  // a store to a hole that cannot be allocated is SIGBUS. With the disk too
  // full for that, the file is mapped read-only and writes answer
  // kResourceExhausted. fallocate(2), not posix_fallocate: others may be
  // writing the file, and glibc's fallback (writing zeros into blocks it
  // reads as zero) could undo their bits; where it is unsupported the file
  // stays as it is.
  static Status ReserveSparse(int fd, const std::string& path, uint64_t size) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return IoError("cannot stat", path, errno);
    if (static_cast<uint64_t>(st.st_blocks) * 512 >= size) return Status::Ok();
    if (::fallocate(fd, 0, 0, static_cast<off_t>(size)) == 0) return Status::Ok();
    if (IsNoRoom(errno)) {
      return IoError("cannot reserve " + std::to_string(size) + " bytes for", path, errno);
    }
    return Status::Ok();
  }

  // `id`, if given, receives the identity of the file mapped.
  Result<std::shared_ptr<WordArray>> OpenArray(std::string_view name, const std::string& path,
                                               const FilterConfig& config, uint64_t part,
                                               FileId* id = nullptr) {
    // A file we may not write (a read-only mount, its permissions) still
    // serves checks and info: it is mapped read-only, and writes answer
    // why (issue #15.8).
    Status writable = Status::Ok();
    int fd = OpenNoStdio(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0 && (errno == EROFS || errno == EACCES || errno == EPERM)) {
      writable = IoError("cannot write", path, errno);
      fd = OpenNoStdio(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) {
      if (errno == ENOENT) return NotFoundStatus(name);
      return IoError("cannot open", path, errno);
    }
    FdCloser closer(fd);
    REDBLOOM_ASSIGN_OR_RETURN(FileHeader f, ReadHeader(fd, path));
    if (!f.config.SameFilterAs(config)) return ConfigChangedStatus(name);
    // A file's part is its name's (N.rbf, or the main file): no drop or
    // re-create puts another part there, a copy or a move by hand does.
    // Read as a re-created filter it was conflict (exit 4, 409), retried
    // for ever by a client that reopens on conflict.
    if (f.part != part) {
      const auto which = [](uint64_t p) {
        return p == kMainPart ? std::string("the main array") : "part " + std::to_string(p);
      };
      return Status::DataLoss(path + " holds " + which(f.part) + " of filter '" +
                              std::string(name) + "', where " + which(part) +
                              " belongs (a file copied or moved by hand?)");
    }
    if (Expired(clock(), f.expires_at_ms)) {
      if (part == kMainPart) {
        FileId file;
        if (const int err = IdentityOf(fd, "", &file); err != 0) {
          return IoError("cannot stat", path, err);
        }
        // A filter of the name made since is not this one: its handle reopens.
        Status s = Remove(name, &file);
        if (s.code() == StatusCode::kConflict) return ConfigChangedStatus(name);
        return ExpiredStatus(name, s);
      } else {
        ::unlink(path.c_str());
      }
      return NotFoundStatus(name);
    }
    REDBLOOM_ASSIGN_OR_RETURN(const Geometry geometry, FileGeometry(config, part));
    if (id != nullptr) {
      if (const int err = IdentityOf(fd, "", id); err != 0)
        return IoError("cannot stat", path, err);
    }

    auto mapping = std::make_shared<Mapping>();
    mapping->size = kHeaderBytes + f.data_bytes;
    if (writable.ok()) writable = ReserveSparse(fd, path, mapping->size);
    const int protection = writable.ok() ? PROT_READ | PROT_WRITE : PROT_READ;
    void* base = ::mmap(nullptr, mapping->size, protection, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return MapError(path, errno);
    // Cells are touched at hash-random offsets, so the kernel's read-around
    // (read_ahead_kb around each fault, 8 MiB on some machines) only adds
    // I/O: on a cold 12 GB filter, sampling 1024 pages for info read 8 GB
    // and took 6 to 16 s. Advisory; a failure changes nothing else.
    ::madvise(base, mapping->size, MADV_RANDOM);
    mapping->base = base;
    mapping->fd = closer.release();
    mapping->array.words = mapping->word_at(kHeaderBytes);
    mapping->array.cells = geometry.bits;
    mapping->array.hashes = geometry.hashes;
    mapping->array.cell_bits = config.cell_bits();
    mapping->array.count = mapping->word_at(f.count_offset);
    mapping->array.superseded = mapping->word_at(f.superseded_offset);
    if (part == kMainPart && f.parts_offset != 0 && KindOf(config.kind).dense_parts) {
      mapping->array.parts_made = mapping->word_at(f.parts_offset);
    }
    // The flag is set only once the path names another file (or none): on
    // the file the path still names it is damage (it sits outside the
    // header's CRC), not a replacement to reopen, which would answer
    // kConflict forever.
    if (std::atomic_ref<uint64_t>(*mapping->array.superseded).load(std::memory_order_acquire) !=
        0) {
      struct stat opened = {};
      struct stat named = {};
      if (::fstat(mapping->fd, &opened) == 0 && ::stat(path.c_str(), &named) == 0 &&
          opened.st_dev == named.st_dev && opened.st_ino == named.st_ino) {
        return Status::DataLoss(path +
                                ": its header says it was dropped or replaced, yet it is still "
                                "the filter's file: the header is damaged (rebuild the filter "
                                "from its items, or drop it)");
      }
    }
    // The mapping outlives its descriptor, which goes now. Kept for every
    // mapping, a window filter's slices and a scaling filter's layers, and
    // a counting filter's file, cost redbloomd a descriptor each for every
    // cached filter (EMFILE, then 503 on every create until a restart).
    // Removes flock() the file through one opened for each (open_lock),
    // which must still be this file: a file since replaced or dropped is
    // not this filter's to lock, and its handle reopens.
    struct stat mapped = {};
    if (::fstat(mapping->fd, &mapped) != 0) return IoError("cannot stat", path, errno);
    ::close(mapping->fd);
    mapping->fd = -1;
    if (config.cell_bits() != 1) {
      const std::string filter(name);
      mapping->array.open_lock = [path, filter, dev = mapped.st_dev,
                                  ino = mapped.st_ino]() -> Result<int> {
        const int lock_fd = OpenNoStdio(path.c_str(), O_RDWR | O_CLOEXEC);
        if (lock_fd < 0) {
          if (errno == ENOENT) return ConfigChangedStatus(filter);
          return IoError("cannot open", path, errno);
        }
        struct stat named = {};
        if (::fstat(lock_fd, &named) != 0 || named.st_dev != dev || named.st_ino != ino) {
          ::close(lock_fd);
          return ConfigChangedStatus(filter);
        }
        return lock_fd;
      };
    }
    mapping->array.remove_mutex = remove_mutex_;
    mapping->array.writable = std::move(writable);
    Mapping* m = mapping.get();
    mapping->array.flush = [m, path]() -> Status {
      if (::msync(m->base, m->size, MS_SYNC) != 0) return IoError("cannot sync", path, errno);
      return Status::Ok();
    };
    // The array keeps its mapping alive.
    return std::shared_ptr<WordArray>(mapping, &mapping->array);
  }

  std::string dir_;
  std::mutex expiry_mu_;
  std::map<ExpiryKey, uint64_t> expiry_;  // expiry_mu_
  // Main files (and layer counts) whose lagging record ListParts tried to
  // raise.
  std::set<std::pair<FileId, uint64_t>> record_attempts_;  // expiry_mu_
  // flock() already excludes every other descriptor, in this process too; the
  // mutex only spares threads of one process the syscall contention.
  std::shared_ptr<std::mutex> remove_mutex_ = std::make_shared<std::mutex>();
};

Result<std::shared_ptr<WordArray>> FileParts::Open(uint64_t part) {
  return store_->OpenPart(name_, config_, part);
}
Status FileParts::Create(uint64_t part, uint64_t expires_at_ms) {
  return store_->CreatePart(name_, config_, main_id_, part, expires_at_ms);
}
Result<std::vector<uint64_t>> FileParts::List() { return store_->ListParts(name_, config_); }
std::optional<PartsStamp> FileParts::Stamp() { return store_->PartsStampOf(name_); }
Result<std::vector<uint64_t>> FileParts::Existing() {
  REDBLOOM_ASSIGN_OR_RETURN(std::vector<uint64_t> parts, store_->PartFiles(name_));
  if (config_.initial_parts() > 0) parts.push_back(0);  // the main file's
  // A window handle that has no slice open (none flagged by a drop to tell
  // it) would list another filter's slices as its own, by its own slice
  // numbers: a filter made again with another window read as empty, until
  // the handle was reopened. The main file is checked after the listing,
  // so that the listing is of the file checked or an older one.
  if (!mapped_) REDBLOOM_RETURN_IF_ERROR(store_->CheckStillNamed(name_, main_id_));
  return parts;
}
Status FileParts::CheckCurrent() { return store_->CheckStillNamed(name_, main_id_); }

}  // namespace

Result<std::unique_ptr<Store>> NewFileStore(std::string_view url, const StoreOptions& options) {
  std::string_view path = url.substr(url.find(':') + 1);
  if (path.starts_with("//")) {
    // file:///abs/dir, or file://localhost/abs/dir (RFC 8089); any other
    // host is a typo for a third slash (file://var/lib/x), which made a
    // relative directory in whatever the working directory was.
    path.remove_prefix(2);
    const std::string_view host = path.substr(0, path.find('/'));
    // Host names are case-insensitive: file://LOCALHOST/x is file:///x.
    if (host.size() == 9 && strncasecmp(host.data(), "localhost", 9) == 0) {
      path.remove_prefix(host.size());
    } else if (!host.empty()) {
      return Status::InvalidArgument("store URL '" + std::string(url) + "' names a host ('" +
                                     std::string(host) + "'): a file store is local; write file:/" +
                                     std::string(path) + " or file:///" + std::string(path) +
                                     " for an absolute path, file:" + std::string(path) +
                                     " for a relative one");
    }
  }
  if (path.empty()) return Status::InvalidArgument("store URL 'file:' needs a directory");
  std::string dir(path);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  // A missing directory is made by the first create, so that reading a
  // store that has none (list, info, check) leaves nothing behind.
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return IoError("cannot open store directory", dir, errno);
  } else if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("store path " + dir + " is not a directory");
  } else if (::faccessat(AT_FDCWD, dir.c_str(), X_OK, AT_EACCESS) != 0) {
    // A directory this process may not search holds no filter it can open:
    // redbloomd started on one, answered 503 to everything and exited 3 at
    // its first stop. (One it may search but not list still opens filters
    // by name; one it may not write still serves checks.)
    return IoError("cannot open store directory", dir, errno);
  }
  return std::unique_ptr<Store>(std::make_unique<FileStore>(std::move(dir), options));
}

}  // namespace redbloom::internal
