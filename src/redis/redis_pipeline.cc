#include "redis/redis_pipeline.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <utility>

#include "redis/redis_scripts.h"

namespace redbloom::internal {

std::string ReplyString(const redisReply* r) { return std::string(ReplyText(r)); }

bool IsArray(const redisReply* r, size_t min_elements) {
  return r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements >= min_elements;
}

Status Unexpected(std::string_view what, const redisReply* r) {
  std::string shape = r == nullptr ? "nothing" : "type " + std::to_string(r->type);
  if (!ReplyText(r).empty()) shape += " '" + ReplyString(r) + "'";
  return Status::Internal("unexpected redis reply to " + std::string(what) + ": " + shape);
}

Result<ReplyPtr> Call(Connection& c, const CommandBuffer& cmd) {
  REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
  return c.ReadOk();
}

Result<ReplyPtr> ReadTransaction(Connection& c, size_t queued, bool* discarded) {
  if (discarded != nullptr) *discarded = false;
  if (c.script_reads()) {
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
    if (r->type == REDIS_REPLY_ERROR) return ReplyErrorStatus(ReplyText(r.get()), c.server());
    if (!IsArray(r.get(), queued) || r->elements != queued) return Unexpected("EVAL", r.get());
    return r;
  }
  Status first_error;
  for (size_t i = 0; i < queued + 1; ++i) {  // +OK, then +QUEUED each
    REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
    if (r->type == REDIS_REPLY_ERROR && first_error.ok()) {
      first_error = ReplyErrorStatus(ReplyText(r.get()), c.server());
    }
  }
  REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr exec, c.Read());
  if (discarded != nullptr) {
    *discarded = exec->type == REDIS_REPLY_ERROR && ReplyText(exec.get()).starts_with("EXECABORT");
  }
  if (!first_error.ok()) return first_error;
  if (exec->type == REDIS_REPLY_ERROR) return ReplyErrorStatus(ReplyText(exec.get()), c.server());
  if (!IsArray(exec.get(), queued)) return Unexpected("EXEC", exec.get());
  return exec;
}

size_t TransactionReplies(const Connection& c, size_t queued) {
  return c.script_reads() ? 1 : queued + 2;
}

void Drain(Connection& c, size_t n) {
  for (size_t i = 0; i < n && !c.broken(); ++i) {
    if (!c.Read().ok()) return;
  }
}

std::string KeyType(Connection& c, std::string_view key) {
  if (c.replies_pending()) return "value of another type";
  CommandBuffer cmd;
  cmd.Command({"TYPE", key});
  if (!c.Append(cmd).ok()) return "value of another type";
  Result<ReplyPtr> r = c.ReadOk();
  if (!r.ok()) return "value of another type";
  return ReplyString(r->get());
}

void BeginEval(CommandBuffer* cmd, std::string_view script,
               std::initializer_list<std::string_view> keys, size_t args) {
  cmd->Begin(3 + keys.size() + args);
  cmd->Arg("EVAL");
  cmd->Arg(script);
  cmd->Arg(uint64_t{keys.size()});
  for (std::string_view k : keys) cmd->Arg(k);
}

void BeginEval(CommandBuffer* cmd, std::string_view script, const std::vector<std::string>& keys,
               size_t args) {
  cmd->Begin(3 + keys.size() + args);
  cmd->Arg("EVAL");
  cmd->Arg(script);
  cmd->Arg(uint64_t{keys.size()});
  for (const std::string& k : keys) cmd->Arg(k);
}

namespace {

// The commands of an encoded buffer, as CommandBuffer writes them (arrays of
// bulk strings): each command's argument count in *argc, all arguments in
// *args. False if the bytes are not that.
bool SplitCommands(std::string_view resp, std::vector<size_t>* argc,
                   std::vector<std::string_view>* args) {
  size_t pos = 0;
  auto number = [&](char kind, size_t* n) {
    const size_t end = resp.find("\r\n", pos);
    if (pos >= resp.size() || resp[pos] != kind || end == std::string_view::npos) return false;
    const auto [ptr, ec] = std::from_chars(resp.data() + pos + 1, resp.data() + end, *n);
    pos = end + 2;
    return ec == std::errc() && ptr == resp.data() + end;
  };
  while (pos < resp.size()) {
    size_t n = 0;
    if (!number('*', &n)) return false;
    argc->push_back(n);
    for (size_t i = 0; i < n; ++i) {
      size_t len = 0;
      if (!number('$', &len) || len > resp.size() - pos || resp.size() - pos - len < 2)
        return false;
      args->push_back(resp.substr(pos, len));
      pos += len + 2;
    }
  }
  return true;
}

// The read commands the stores put in a read transaction; the script runs
// nothing else.
bool ScriptMayRead(std::string_view command) {
  for (std::string_view ok :
       {"GETRANGE", "BITFIELD_RO", "BITCOUNT", "STRLEN", "HMGET", "HGET", "HEXISTS", "HKEYS"}) {
    if (command == ok) return true;
  }
  return false;
}

}  // namespace

Status SendReads(Connection& c, const CommandBuffer& transaction) {
  if (!c.script_reads()) return c.Append(transaction);
  REDBLOOM_RETURN_IF_ERROR(transaction.Validate());
  std::vector<size_t> argc;
  std::vector<std::string_view> args;
  const bool split = SplitCommands(transaction.data(), &argc, &args);
  // MULTI, at least one command whose first argument is a key, EXEC.
  if (!split || argc.size() < 3 || argc.front() != 1 || args.front() != "MULTI" ||
      argc.back() != 1 || args.back() != "EXEC" || argc[1] < 2) {
    return Status::Internal("not a read transaction: cannot send it as a script");
  }
  size_t script_args = 0;
  for (size_t i = 1, at = 1; i + 1 < argc.size(); at += argc[i++]) {
    if (!ScriptMayRead(args[at]) || (argc[i] > 6002 && args[at] != "BITFIELD_RO")) {
      return Status::Internal("a read transaction's " + std::string(args[at]) +
                              " cannot go in a no-writes script");
    }
    script_args += 1 + argc[i];
  }
  CommandBuffer script;
  // The first command's key routes the script (a transaction's keys share a slot).
  BeginEval(&script, scripts::kReads, {args[2]}, script_args);
  for (size_t i = 1, at = 1; i + 1 < argc.size(); at += argc[i++]) {
    script.Arg(uint64_t{argc[i]});
    for (size_t j = 0; j < argc[i]; ++j) script.Arg(args[at + j]);
  }
  return c.Append(script);
}

Status Streamer::Finish() {
  if (Status s = cmd_.Validate(); !s.ok()) {
    c_.MarkBroken();
    return s;
  }
  if (Held()) return SendReads(c_, cmd_);
  c_.CountCommands(cmd_.commands());
  return Push();
}

Status Streamer::Push() {
  REDBLOOM_RETURN_IF_ERROR(c_.AppendRaw(std::string_view(cmd_.data()).substr(sent_)));
  sent_ = cmd_.data().size();
  return c_.Flush();
}

void SortedOrder(const uint64_t* offsets, size_t count, std::vector<uint32_t>* order) {
  uint64_t highest = 0;
  for (size_t i = 0; i < count; ++i) highest = std::max(highest, offsets[i]);
  const int width = static_cast<int>(std::bit_width(highest));
  const int passes = (width + 11) / 12;
  order->resize(count);
  for (size_t i = 0; i < count; ++i) (*order)[i] = static_cast<uint32_t>(i);
  if (passes == 0) return;
  const int digit_bits = (width + passes - 1) / passes;
  const uint64_t mask = (uint64_t{1} << digit_bits) - 1;
  std::vector<uint32_t> other(count);
  std::vector<uint32_t> start(mask + 1);
  for (int shift = 0; shift < width; shift += digit_bits) {
    std::fill(start.begin(), start.end(), 0);
    for (uint32_t i : *order) ++start[(offsets[i] >> shift) & mask];
    uint32_t sum = 0;
    for (auto& b : start) sum += std::exchange(b, sum);
    for (uint32_t i : *order) other[start[(offsets[i] >> shift) & mask]++] = i;
    order->swap(other);
  }
}

uint64_t NonZeroNibbles(std::string_view bytes) {
  uint64_t n = 0;
  for (unsigned char b : bytes) n += ((b & 0xF0) != 0) + ((b & 0x0F) != 0);
  return n;
}

}  // namespace redbloom::internal
