#include "exit_codes.h"

namespace redbloom::cli {

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kTooLarge:
    case StatusCode::kUnimplemented:
      return kExitUsage;
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kConflict:
      return kExitNotFound;
    // The store failed, not the request: unreachable, timed out, out of room
    // (Redis OOM, a full disk), or holding something we cannot read.
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kResourceExhausted:
    case StatusCode::kDataLoss:
    case StatusCode::kInternal:
      return kExitIo;
  }
  return kExitIo;
}

}  // namespace redbloom::cli
