#include "redbloom/status.h"

#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "status_reasons.h"

namespace redbloom {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kAlreadyExists:
      return "already_exists";
    case StatusCode::kConflict:
      return "conflict";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kDeadlineExceeded:
      return "deadline_exceeded";
    case StatusCode::kResourceExhausted:
      return "resource_exhausted";
    case StatusCode::kTooLarge:
      return "too_large";
    case StatusCode::kDataLoss:
      return "data_loss";
    case StatusCode::kUnimplemented:
      return "unimplemented";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

namespace {

struct ReasonInfo {
  StatusReason reason;
  std::string_view name;
  internal::ReasonClass kind;
};

// In the enum's order (a test walks the names to the first "unknown").
constexpr ReasonInfo kReasons[] = {
    {StatusReason::kNone, "none", internal::ReasonClass::kOther},
    {StatusReason::kAuthFailed, "auth_failed", internal::ReasonClass::kConfiguration},
    {StatusReason::kPermissionDenied, "permission_denied", internal::ReasonClass::kConfiguration},
    {StatusReason::kCommandMissing, "command_missing", internal::ReasonClass::kConfiguration},
    {StatusReason::kTlsFailed, "tls_failed", internal::ReasonClass::kConfiguration},
    {StatusReason::kNotReplicated, "not_replicated", internal::ReasonClass::kServerState},
    {StatusReason::kRestarted, "restarted", internal::ReasonClass::kServerState},
    {StatusReason::kWritableReplica, "writable_replica", internal::ReasonClass::kServerState},
    {StatusReason::kAnswersLost, "answers_lost", internal::ReasonClass::kServerState},
    {StatusReason::kClockBehind, "clock_behind", internal::ReasonClass::kServerState},
    {StatusReason::kStalledServer, "stalled_server", internal::ReasonClass::kOther},
    {StatusReason::kBeingCreated, "being_created", internal::ReasonClass::kOther},
    {StatusReason::kMappingLimit, "mapping_limit", internal::ReasonClass::kOther},
    {StatusReason::kServerFull, "server_full", internal::ReasonClass::kOther},
    {StatusReason::kConnectionLost, "connection_lost", internal::ReasonClass::kOther},
    {StatusReason::kContended, "contended", internal::ReasonClass::kOther},
};

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < std::size(kReasons); ++i) {
    if (static_cast<size_t>(kReasons[i].reason) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "kReasons must list StatusReason in its order");

const ReasonInfo* InfoOf(StatusReason reason) {
  const auto i = static_cast<size_t>(reason);
  return i < std::size(kReasons) ? &kReasons[i] : nullptr;
}

}  // namespace

std::string_view StatusReasonName(StatusReason reason) {
  const ReasonInfo* info = InfoOf(reason);
  return info == nullptr ? "unknown" : info->name;
}

namespace internal {
ReasonClass ClassOf(StatusReason reason) {
  const ReasonInfo* info = InfoOf(reason);
  return info == nullptr ? ReasonClass::kOther : info->kind;
}
}  // namespace internal

const std::string& Status::message() const {
  static const std::string* const kEmpty = new std::string();  // never destroyed
  return rep_ == nullptr ? *kEmpty : rep_->message;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(StatusCodeName(rep_->code));
  out += ": ";
  out += rep_->message;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += rep_->message;
  return Status(rep_->code, std::move(msg), rep_->reason);
}

Status Status::WithSuffix(std::string_view more) const {
  if (ok()) return *this;
  return Status(rep_->code, rep_->message + std::string(more), rep_->reason);
}

namespace internal {

void DieReadingFailedResult(const Status& status) {
  std::fprintf(stderr, "redbloom: read the value of a failed Result: %s\n",
               status.ToString().c_str());
  std::fflush(stderr);
  std::abort();
}

const Status& MovedFromResultStatus() {
  static const Status* const moved = new Status(Status::Internal("Result used after move"));
  return *moved;
}

}  // namespace internal

}  // namespace redbloom
