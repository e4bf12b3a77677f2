#include "http_status.h"

namespace redbloom::server {

int HttpStatusFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kConflict:
      return 409;
    case StatusCode::kTooLarge:
      return 413;
    case StatusCode::kUnimplemented:
      return 501;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    // 507 Insufficient Storage (RFC 4918): the server cannot store what the
    // request needs. Not 413: the request is fine, the store is full.
    case StatusCode::kResourceExhausted:
      return 507;
    case StatusCode::kDataLoss:
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

bool IsStoreFault(StatusCode code) {
  return code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded ||
         code == StatusCode::kResourceExhausted || code == StatusCode::kDataLoss ||
         code == StatusCode::kInternal;
}

}  // namespace redbloom::server
