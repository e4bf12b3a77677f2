#include "redbloom/status.h"

#include <cstdio>
#include <cstdlib>

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

std::string_view StatusReasonName(StatusReason reason) {
  switch (reason) {
    case StatusReason::kNone:
      return "none";
    case StatusReason::kAuthFailed:
      return "auth_failed";
    case StatusReason::kPermissionDenied:
      return "permission_denied";
    case StatusReason::kCommandMissing:
      return "command_missing";
    case StatusReason::kTlsFailed:
      return "tls_failed";
    case StatusReason::kNotReplicated:
      return "not_replicated";
    case StatusReason::kRestarted:
      return "restarted";
    case StatusReason::kWritableReplica:
      return "writable_replica";
    case StatusReason::kAnswersLost:
      return "answers_lost";
    case StatusReason::kClockBehind:
      return "clock_behind";
    case StatusReason::kStalledServer:
      return "stalled_server";
    case StatusReason::kBeingCreated:
      return "being_created";
    case StatusReason::kMappingLimit:
      return "mapping_limit";
  }
  return "unknown";
}

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
