// The OpenAPI 3.1 document of redbloomd's HTTP API (docs/openapi.json),
// served at GET /v1/openapi.json.
#ifndef REDBLOOM_SERVER_OPENAPI_H_
#define REDBLOOM_SERVER_OPENAPI_H_

#include <string_view>

namespace redbloom::server {

// docs/openapi.json as it was when redbloomd was built: a generated .cc
// (cmake/embed_file.cmake) holds its bytes, so nothing is looked up at run
// time and the served document always matches the binary's source tree.
std::string_view OpenApiJson();

}  // namespace redbloom::server

#endif  // REDBLOOM_SERVER_OPENAPI_H_
