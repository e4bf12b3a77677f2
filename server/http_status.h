// The HTTP status of a redbloom Status (docs/http-api.md, "Errors").
#ifndef REDBLOOM_SERVER_HTTP_STATUS_H_
#define REDBLOOM_SERVER_HTTP_STATUS_H_

#include "redbloom/status.h"

namespace redbloom::server {

// 400, 404, 409, 413, 500, 501, 503, 504, 507; the one place where codes
// become HTTP statuses.
int HttpStatusFor(const Status& status);

// Errors that mean the store failed rather than the request; they are
// counted in redbloomd_store_errors_total.
bool IsStoreFault(StatusCode code);

}  // namespace redbloom::server

#endif  // REDBLOOM_SERVER_HTTP_STATUS_H_
