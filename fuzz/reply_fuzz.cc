// Redis replies: bytes from a server (or whatever answers on its port) read
// with the reader every Connection uses, whose 0s and 1s inside arrays are
// shared objects (redis_client.cc), then handed to each parser of replies
// that takes a whole reply (and Redisson's config hash as HGETALL reads
// it). Checks that the shared integers are never freed
// or written (ASan, and the values after every input), that the parsers
// refuse or accept without reading past the reply, and what an accepted
// reply must satisfy.
//
// Input: a flags byte, then RESP bytes. Flags bit 0..6: where the bytes are
// split into two feeds (as a reply that arrives in two reads is); bit 7:
// which filter the companion checks expect.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "redbloom/filter_config.h"
#include "redis/cluster_source.h"
#include "redis/redis_client.h"
#include "redis/redis_companion.h"
#include "redis/redis_meta.h"
#include "redis/redis_ops.h"
#include "redis/redis_url.h"
#include "redis/sentinel_source.h"
#include "strategy/strategy_def.h"

namespace {

using namespace redbloom;
using namespace redbloom::internal;

const FilterConfig& CompanionConfig(bool redisson) {
  static const auto make = [](Strategy s) {
    FilterOptions o;
    o.capacity = 1000;
    o.error_rate = 0.01;
    o.strategy = s;
    auto c = MakeConfig(o);
    if (!c.ok()) std::abort();
    return *c;
  };
  static const FilterConfig redisson_config = make(Strategy::kRedisson);
  static const FilterConfig guava_config = make(Strategy::kGuava64);
  return redisson ? redisson_config : guava_config;
}

void CheckSlots(const redisReply* r) {
  std::map<std::pair<std::string, int>, int> nodes;
  const HostPort asked{"127.0.0.1", 7000};
  auto map = ParseClusterSlots(r, asked, [&](const std::string& host, int port) {
    if (host.empty() || port < 1 || port > 65535) std::abort();
    return nodes.emplace(std::make_pair(host, port), static_cast<int>(nodes.size())).first->second;
  });
  if (!map.ok()) {
    if (map.status().message().empty()) std::abort();
    return;
  }
  const SlotMap& m = **map;
  if (m.masters.empty() || !std::is_sorted(m.masters.begin(), m.masters.end()) ||
      std::adjacent_find(m.masters.begin(), m.masters.end()) != m.masters.end()) {
    std::abort();
  }
  for (int16_t node : m.master) {
    if (node != -1 && !std::binary_search(m.masters.begin(), m.masters.end(), int{node})) {
      std::abort();
    }
  }
  for (const auto& [master, replicas] : m.replicas) {
    if (!std::binary_search(m.masters.begin(), m.masters.end(), master)) std::abort();
    for (int replica : replicas) {
      if (replica < 0 || replica >= static_cast<int>(nodes.size())) std::abort();
    }
  }
}

// Redisson's {NAME}:config hash, read by attach without parameters: what
// is accepted writes back to the same fields, and sizes a filter or is
// refused with a message.
void CheckRedissonConfig(const redisReply* r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0) return;
  FieldMap fields;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    fields[std::string(ReplyText(r->element[i]))] = std::string(ReplyText(r->element[i + 1]));
  }
  const StrategyDef* def = FindStrategy(Strategy::kRedisson);
  uint64_t capacity = 0;
  double error_rate = 0;
  Status s = def->companion->parameters(fields, "config", &capacity, &error_rate);
  if (!s.ok()) {
    if (s.code() != StatusCode::kDataLoss || s.message().empty()) std::abort();
    return;
  }
  auto g = def->geometry(capacity, error_rate);
  if (!g.ok()) std::abort();
  for (const auto& [field, value] : def->companion->fields(capacity, error_rate, *g)) {
    auto it = fields.find(field);
    if (field != "falseProbability" && (it == fields.end() || it->second != value)) std::abort();
  }
  FilterOptions o;
  o.capacity = capacity;
  o.error_rate = error_rate;
  o.strategy = Strategy::kRedisson;
  if (auto config = MakeConfig(o); !config.ok() && config.status().message().empty()) {
    std::abort();
  }
}

// What the sentinels answer: an address taken is one a connection can be
// asked to reach (a host of printable characters, a port in range).
void CheckHostPort(const HostPort& h) {
  if (h.host.empty() || h.host.size() > 255 || h.port < 1 || h.port > 65535) std::abort();
  for (char c : h.host) {
    if (c <= ' ' || c >= 0x7f) std::abort();
  }
}

void CheckSentinel(const redisReply* r) {
  if (Result<HostPort> m = ParseSentinelMaster(r); m.ok()) {
    CheckHostPort(*m);
  } else if (m.status().message().empty()) {
    std::abort();
  }
  for (const HostPort& h : ParseSentinelReplicas(r)) CheckHostPort(h);
  // The announcement's text, for the master named by its first word.
  const std::string_view text = ReplyText(r);
  const std::string_view name = text.substr(0, text.find(' '));
  if (auto s = ParseSwitchMaster(text, name); s.ok()) {
    if (!s->has_value()) std::abort();  // the name is ours
    CheckHostPort(**s);
  } else if (s.status().message().empty()) {
    std::abort();
  }
}

void CheckReply(const redisReply* r, bool redisson) {
  CheckSentinel(r);
  const std::string_view text = ReplyText(r);
  if (r->type == REDIS_REPLY_ERROR) {
    if (auto redirect = ParseClusterRedirect(text)) {
      const bool moves = redirect->kind == ClusterRedirect::Kind::kMoved ||
                         redirect->kind == ClusterRedirect::Kind::kAsk;
      if (moves && (redirect->slot < 0 || redirect->slot >= kClusterSlots || redirect->port < 1 ||
                    redirect->port > 65535)) {
        std::abort();
      }
    }
  }
  if (auto meta = ParseMeta(r, "meta"); meta.ok()) {
    if (meta->config.shards < 1 || (meta->config.shards > 1 && meta->shard_token.empty())) {
      std::abort();
    }
  } else if (meta.status().code() != StatusCode::kDataLoss) {
    std::abort();
  }
  CheckSlots(r);
  CheckRedissonConfig(r);
  const FilterConfig& config = CompanionConfig(redisson);
  if (Status s = CheckCompanionReply(r, "f", "companion", config); s.ok()) {
    // Only a hash that holds the filter's own size and hashIterations.
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        ReplyText(r->element[0]) != std::to_string(config.geometry.bits)) {
      std::abort();
    }
  }
  // The create and attach scripts' answers, once EvalWithMeta has checked
  // their shape: a code, and something after any code but 0.
  if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
      r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer >= 8) {
    if (CompanionCodeStatus(r, "f", "companion", config).ok()) std::abort();
  }
  // A block read: the reply holds the bytes from 0 on, and the item's bits
  // are wherever the reply's length puts them.
  const uint64_t item[4] = {0, 7, uint64_t{r->len} * 8, uint64_t{r->len} * 8 + 9};
  uint8_t present = 2;
  if (DecodeBlockRead(r, 0, item, 2, &present).ok() && present > 1) std::abort();
  if (DecodeBlockRead(r, 0, item, 4, &present).ok() && present != 0) std::abort();
}

// Whether some '*' in `bytes` is followed by a count over 2^16. hiredis
// allocates an array's element pointers as soon as it reads its header, so
// "*70000000\r\n" costs 560 MB before any element arrives: what a server
// announces, it may make its client allocate (hiredis 0.14 has no cap; 1.x
// caps at 2^32 - 1 elements). Such inputs test hiredis, not us, and would
// trip the fuzzer's allocation limit; they are skipped. (Conservative: a '*'
// inside a string counts too.)
bool AnnouncesHugeArray(std::string_view bytes) {
  for (size_t at = bytes.find('*'); at != std::string_view::npos; at = bytes.find('*', at + 1)) {
    uint64_t count = 0;
    for (size_t i = at + 1; i < bytes.size() && bytes[i] >= '0' && bytes[i] <= '9'; ++i) {
      count = count * 10 + static_cast<uint64_t>(bytes[i] - '0');
      if (count > (uint64_t{1} << 16)) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (AnnouncesHugeArray(bytes)) return 0;
  const size_t split = std::min<size_t>(flags & 0x7F, bytes.size());
  ReaderPtr reader = NewReplyReader();
  if (reader == nullptr) std::abort();
  for (std::string_view part : {bytes.substr(0, split), bytes.substr(split)}) {
    if (redisReaderFeed(reader.get(), part.data(), part.size()) != REDIS_OK) std::abort();
    while (true) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader.get(), &raw) != REDIS_OK) return 0;  // a protocol error
      if (raw == nullptr) break;                                          // more bytes needed
      ReplyPtr reply(static_cast<redisReply*>(raw));
      CheckReply(reply.get(), (flags & 0x80) != 0);
    }
  }
  // The shared 0 and 1 survive every reply: read one back through a fresh
  // array.
  ReaderPtr check = NewReplyReader();
  constexpr std::string_view kProbe = "*2\r\n:0\r\n:1\r\n";
  void* raw = nullptr;
  if (redisReaderFeed(check.get(), kProbe.data(), kProbe.size()) != REDIS_OK ||
      redisReaderGetReply(check.get(), &raw) != REDIS_OK || raw == nullptr) {
    std::abort();
  }
  ReplyPtr probe(static_cast<redisReply*>(raw));
  if (probe->element[0]->type != REDIS_REPLY_INTEGER || probe->element[0]->integer != 0 ||
      probe->element[1]->type != REDIS_REPLY_INTEGER || probe->element[1]->integer != 1) {
    std::abort();
  }
  return 0;
}
