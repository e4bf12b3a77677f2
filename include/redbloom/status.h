// Status and Result<T>: the one error model of redbloom.
//
// Every fallible public call returns a Status or a Result<T>. The codes follow
// abseil's canonical codes, so each carries its retry meaning:
//   kUnavailable / kDeadlineExceeded  -> transient, retry with backoff;
//   kInvalidArgument / kNotFound ...  -> the request itself is wrong, don't retry;
//   kConflict -> the filter is not the one the call expected: a create met one
//     with other parameters (don't retry), or a handle met its filter rebuilt,
//     dropped or re-created (open it again, then retry; BloomFilter's calls
//     reopen and retry by themselves a few times before they answer it).
// The CLI maps a code to an exit status (tools/exit_codes.h) and the HTTP
// service to an HTTP status (server/http_status.h), each in exactly one place.
//
// A store failure is always an error. No call ever turns "the store could not
// be read" into "the item is absent".
#ifndef REDBLOOM_STATUS_H_
#define REDBLOOM_STATUS_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace redbloom {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,   // bad parameters or input; fix the request
  kNotFound,          // the filter does not exist
  kAlreadyExists,     // created before, with identical parameters
  kConflict,          // exists with other parameters, or a concurrent change won
  kUnavailable,       // store unreachable or connection lost; retryable
  kDeadlineExceeded,  // store timed out; retryable
  // The store has no room left: Redis answered OOM (maxmemory), the disk is
  // full (ENOSPC, EDQUOT; EFBIG, a file past the file-size limit), memory for a filter could not be
  // allocated, or a scaling filter reached its last layer. A store error, not a bad request: the
  // same request succeeds once there is room (a larger maxmemory, free disk, a rebuilt filter).
  kResourceExhausted,
  kTooLarge,       // the request is over a size limit (body, items, item length); send less
  kDataLoss,       // a stored filter is corrupt or of a foreign format, or a file:
                   // filter's path holds no regular file (a link, a FIFO, a directory)
  kUnimplemented,  // not supported by this store or filter kind
  kInternal,       // a bug, or a store answer we do not understand
};

// Stable lower-case name of a code ("invalid_argument"), used in JSON errors.
std::string_view StatusCodeName(StatusCode code);

// What a failure is, where its code alone does not tell a caller what to do
// next (RocksDB's Status::SubCode). Most kUnavailable errors pass with a
// retry; the first groups below do not (configuration to mend, a server's
// state), the last are transient (a stalled or full server, a lost
// connection, a create under way). A reason survives WithContext and WithSuffix
// (a status rebuilt with another code drops it, as it should), so no caller
// reads the message to decide: the message is for people and may change.
enum class StatusReason : unsigned char {
  kNone = 0,
  // Configuration to mend: retrying cannot help.
  kAuthFailed,        // the server refused the credentials (NOAUTH, WRONGPASS)
  kPermissionDenied,  // the user's ACL denies a command (NOPERM)
  kCommandMissing,    // the server does not offer a command (renamed, or too old)
  kTlsFailed,         // a certificate that does not verify, a failed TLS handshake
  // A server's state, which an immediate retry does not change.
  kNotReplicated,    // fewer replicas confirmed a write than wait_replicas asks
  kRestarted,        // the server restarted since this client connected (run_id)
  kWritableReplica,  // a replica that takes writes, which would not reach its master
  kAnswersLost,      // an add's answers were lost with its connection; it is not resent
  kClockBehind,      // this client's clock is behind the server's
  // Transient, but a retry on the same server would most likely wait as long.
  kStalledServer,
  // A sharded filter whose create has not finished (or was interrupted).
  kBeingCreated,
  // The process holds as many memory mappings as vm.max_map_count allows.
  kMappingLimit,
  // The server refused a connection at its maxclients.
  kServerFull,
  // The server closed or reset the connection without an answer (over TLS,
  // what a server at its maxclients does to a new connection).
  kConnectionLost,
  // Other clients' changes kept undoing the call (a create whose filter was
  // dropped each time it was made): no fault of the store; retry.
  kContended,
};

// Stable lower-case name of a reason ("auth_failed"; "none" for kNone),
// given in redbloomd's JSON errors.
std::string_view StatusReasonName(StatusReason reason);

// An OK Status is one null pointer (leveldb's layout): a call that succeeds
// returns, checks and destroys no string. An error holds its code and
// message on the heap; copying one copies them, moving one moves the
// pointer and leaves the source OK. (A Result<bool> of a single Contains
// was 48 bytes, five stores to return and a string to destroy; with this,
// 16 bytes and two stores: single block checks at 1e6 went from 2.00-2.07x
// a batched one to 1.93-1.95x together with NonAsciiBits' 8-16-byte case.)
class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  // A code of kOk makes an OK Status, whose message is empty.
  Status(StatusCode code, std::string message, StatusReason reason = StatusReason::kNone)
      : rep_(code == StatusCode::kOk
                 ? nullptr
                 : std::make_unique<Rep>(Rep{code, reason, std::move(message)})) {}
  Status(const Status& other)
      : rep_(other.rep_ == nullptr ? nullptr : std::make_unique<Rep>(*other.rep_)) {}
  Status& operator=(const Status& other) {
    if (this != &other) rep_ = other.rep_ == nullptr ? nullptr : std::make_unique<Rep>(*other.rep_);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status Conflict(std::string msg) { return {StatusCode::kConflict, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status DeadlineExceeded(std::string msg) {
    return {StatusCode::kDeadlineExceeded, std::move(msg)};
  }
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status TooLarge(std::string msg) { return {StatusCode::kTooLarge, std::move(msg)}; }
  static Status DataLoss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
  static Status Unimplemented(std::string msg) {
    return {StatusCode::kUnimplemented, std::move(msg)};
  }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ == nullptr ? StatusCode::kOk : rep_->code; }
  const std::string& message() const;
  StatusReason reason() const { return rep_ == nullptr ? StatusReason::kNone : rep_->reason; }
  // True for errors a caller may retry after a backoff. (A kUnavailable
  // with a reason() such as kAuthFailed needs a change elsewhere first.)
  bool IsTransient() const {
    return code() == StatusCode::kUnavailable || code() == StatusCode::kDeadlineExceeded;
  }

  // "invalid_argument: capacity must be >= 1"
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context: `; the code and
  // reason stay.
  Status WithContext(std::string_view context) const;
  // Returns a copy whose message is followed by `more`; the code and reason
  // stay. For a failure explained further ("...; its temporary filter was
  // left").
  Status WithSuffix(std::string_view more) const;

 private:
  struct Rep {
    StatusCode code;
    StatusReason reason;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;  // null when OK
};

namespace internal {
// Prints `status` to stderr and aborts: reading the value of a failed Result
// is a bug in the caller, and a crash that names the error beats reading
// garbage (abseil's StatusOr::value() does the same).
[[noreturn]] void DieReadingFailedResult(const Status& status);
// The status of a failed Result that was moved from.
const Status& MovedFromResultStatus();
}  // namespace internal

// Either a value or a non-OK Status. value(), operator* and operator-> on an
// error abort with the status printed; check ok() first.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status::Internal("Result constructed from an OK status");
  }

  bool ok() const { return value_.has_value(); }
  // A moved-from error reads as kInternal "Result used after move", never
  // as OK (a moved-from Status is OK, and `if (!r.ok()) return r.status();`
  // must not return OK from a call that failed).
  const Status& status() const {
    if (!value_.has_value() && status_.ok()) [[unlikely]]
      return internal::MovedFromResultStatus();
    return status_;
  }
  T& value() & {
    CheckOk();
    return *value_;
  }
  const T& value() const& {
    CheckOk();
    return *value_;
  }
  T&& value() && {
    CheckOk();
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void CheckOk() const {
    if (!value_.has_value()) [[unlikely]]
      internal::DieReadingFailedResult(status());
  }

  std::optional<T> value_;
  Status status_;
};

}  // namespace redbloom

// The status is named uniquely (__COUNTER__), so that a use nested in a
// lambda inside another use (a store's Run(..., [&] { ... })) does not
// shadow the outer, on one line too.
#define REDBLOOM_RETURN_IF_ERROR(expr) \
  REDBLOOM_RETURN_IF_ERROR_IMPL_(REDBLOOM_CONCAT_(_rb_status_, __COUNTER__), expr)
#define REDBLOOM_RETURN_IF_ERROR_IMPL_(status, expr) \
  do {                                               \
    ::redbloom::Status status = (expr);              \
    if (!status.ok()) return status;                 \
  } while (0)

#define REDBLOOM_CONCAT_INNER_(a, b) a##b
#define REDBLOOM_CONCAT_(a, b) REDBLOOM_CONCAT_INNER_(a, b)
#define REDBLOOM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.ok()) return tmp.status();                   \
  lhs = std::move(tmp).value()
// REDBLOOM_ASSIGN_OR_RETURN(auto x, SomeResultCall());
#define REDBLOOM_ASSIGN_OR_RETURN(lhs, expr) \
  REDBLOOM_ASSIGN_OR_RETURN_IMPL_(REDBLOOM_CONCAT_(_rb_result_, __COUNTER__), lhs, expr)

#endif  // REDBLOOM_STATUS_H_
