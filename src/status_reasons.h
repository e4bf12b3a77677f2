// What a StatusReason means to a caller deciding whether to retry: one
// table in status.cc gives each reason its name and its class, so that no
// switch elsewhere restates the list.
#ifndef REDBLOOM_STATUS_REASONS_H_
#define REDBLOOM_STATUS_REASONS_H_

#include "redbloom/status.h"

namespace redbloom::internal {

enum class ReasonClass {
  kOther,          // kNone, or a reason a retry may outlive (a stalled server, a create under way)
  kConfiguration,  // configuration to mend: credentials, ACLs, renamed commands, TLS
  kServerState,    // a server's state an immediate retry does not change (restarted, replicas)
};

ReasonClass ClassOf(StatusReason reason);

}  // namespace redbloom::internal

#endif  // REDBLOOM_STATUS_REASONS_H_
