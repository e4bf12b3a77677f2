// PUT /v1/filters/{name} bodies through redbloomd's Service on a mem: store
// with a 1 MiB max_filter_bytes, then every item route on what it made.
// Every answer is a 2xx, a 4xx or a 501, in JSON an error's shape where it
// is not a 2xx; a filter made is within the limit once items are in it (a
// window's slices are made by adds), a second PUT of the same
// body answers 200, an item added is present (but for windows and TTLs,
// whose items may leave between two calls), and the filter deletes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "metrics.h"
#include "service.h"

namespace {

using nlohmann::json;
using redbloom::server::Reply;
using redbloom::server::Service;

constexpr uint64_t kMaxFilterBytes = uint64_t{1} << 20;
// What a filter's info may count beyond its bits (a scaling filter's first
// layer is sized ahead of its config; its record is a few bytes).
constexpr uint64_t kInfoSlackBytes = 64 << 10;

Service& TheService() {
  // Never destroyed: libFuzzer exits without unwinding the last input.
  static auto* metrics = new redbloom::server::Metrics();
  static Service* service = [] {
    redbloom::server::ServiceOptions options;
    options.store_url = "mem:";
    options.max_filter_bytes = kMaxFilterBytes;
    auto* s = new Service(options, metrics);
    if (!s->Start().ok()) std::abort();
    return s;
  }();
  return *service;
}

[[noreturn]] void Fail(const char* what, const Reply& reply, std::string_view body) {
  std::fprintf(stderr, "put_filter_fuzz: %s answered %d: %s\nPUT body: %.*s\n", what, reply.status,
               reply.body.c_str(), static_cast<int>(body.size()), body.data());
  std::abort();
}

// Checks the shape every answer has, and returns its JSON (null if none).
json Checked(const char* what, const Reply& reply, std::string_view body) {
  const bool client_error = reply.status >= 400 && reply.status < 500;
  if (!(reply.status >= 200 && reply.status < 300) && !client_error && reply.status != 501) {
    Fail(what, reply, body);
  }
  if (reply.content_type != "application/json") return nullptr;
  json parsed = json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) Fail(what, reply, body);
  if (reply.status >= 300 && !(parsed.contains("error") && parsed["error"].is_string() &&
                               parsed.contains("message") && parsed["message"].is_string())) {
    Fail(what, reply, body);
  }
  return parsed;
}

void Expect(bool holds, const char* what, const Reply& reply, std::string_view body) {
  if (!holds) Fail(what, reply, body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  Service& service = TheService();

  const Reply put = service.PutFilter("f", body);
  Checked("PUT", put, body);
  if (put.status != 201) return 0;  // refused; nothing was made (200 needs one)

  const Reply get = service.GetFilter("f");
  const json info = Checked("GET", get, body);
  Expect(get.status == 200 && info.is_object(), "GET after a PUT", get, body);
  const Reply again = service.PutFilter("f", body);
  Checked("PUT again", again, body);
  Expect(again.status == 200, "the same PUT again", again, body);

  const std::string encoding = info.value("encoding", "");
  const std::string kind = info.value("kind", "");
  const bool ints = encoding == "int32" || encoding == "int64";
  const char* items = ints ? R"({"items":[1,22,-3,0]})" : R"({"items":["1","22","-3",""]})";
  const Reply add = service.AddItems("f", items);
  Checked("POST items", add, body);
  Expect(add.status == 200, "an add of well-formed items", add, body);
  const Reply check = service.CheckItems("f", items);
  const json present = Checked("POST check", check, body);
  Expect(check.status == 200, "a check of well-formed items", check, body);
  if (kind != "window" && info.value("ttl_seconds", uint64_t{0}) == 0) {
    for (const json& answer : present.value("present", json::array())) {
      Expect(answer == true, "an added item checked absent", check, body);
    }
    const Reply one = service.CheckItem("f", "22");
    Expect(Checked("GET item", one, body).value("present", false), "an added item absent", one,
           body);
  }

  // After the adds, which made a window's first slice (none before).
  const Reply filled = service.GetFilter("f");
  Expect(Checked("GET after adds", filled, body).value("memory_bytes", uint64_t{0}) <=
             kMaxFilterBytes + kInfoSlackBytes,
         "a filter past max_filter_bytes", filled, body);

  const Reply remove = service.RemoveItems("f", items);
  Checked("POST remove", remove, body);
  Expect((remove.status == 200) == (kind == "counting"), "a remove", remove, body);
  Checked("DELETE item", service.RemoveItem("f", "22"), body);
  const Reply drop = service.DeleteFilter("f");
  Checked("DELETE", drop, body);
  Expect(drop.status == 200, "a DELETE of the filter made", drop, body);
  return 0;
}
