// RedisBitStore's writes: adds (the guarded transaction and the small-add
// script, with reservations for scaling layers) and counting removes. The
// rest of the class is in redis_bit_store.cc.
#include <algorithm>
#include <functional>
#include <vector>

#include "redis/redis_bit_store.h"
#include "redis/redis_bit_store_impl.h"
#include "redis/redis_meta.h"
#include "redis/redis_pipeline.h"
#include "redis/redis_scripts.h"
#include "stores.h"

namespace redbloom::internal {

// ---- Adds -------------------------------------------------------------------

namespace {

// Whether an add that failed with `s` after sending lost answers its caller
// wants (b.out): lost with the connection, not refused by a reply (READONLY,
// MOVED, LOADING: nothing ran). See AddBatch.
bool AnswersLost(const Connection& c, const PartBatch& b, const Status& s) {
  return b.out != nullptr && c.broken() && s.code() == StatusCode::kUnavailable &&
         !IsPermanentFailure(s);
}

}  // namespace

Status RedisBitStore::Add(std::span<PartBatch> batches) {
  std::vector<std::string> keys;
  std::vector<std::function<Status()>> tasks;
  for (PartBatch& b : batches) {
    REDBLOOM_ASSIGN_OR_RETURN(CellsPtr cells, CellsOf(b.part));
    REDBLOOM_RETURN_IF_ERROR(CheckBatch(*cells, b));
    b.refused = false;
    b.accepted = 0;
    b.room = 0;
    if (b.items == 0) continue;
    keys.push_back(cells->meta);
    tasks.push_back([this, cells, &b] { return AddBatch(*cells, b); });
  }
  // The shards of a sharded filter, on their nodes at once.
  if (tasks.size() == 1) return tasks.front()();
  return shared_->source->InParallel(keys, tasks, ConnectionSource::OnFailure::kStopThatServer);
}

// Adds are idempotent for the bits (a bit set twice stays set), so a batch
// whose connection died is re-sent. If the lost attempt had in fact run, the
// retry finds those bits set and reports the items as not new, and the count
// misses them; with a capacity it reserves their room twice, which makes the
// layer fill early (never late). The count can over-count only when a lost
// attempt carried the count of earlier batches (see AddOn) and had run.
// Counting filters are not retried: a second increment would be a second add.
//
// An attempt whose answers were read stands, though: a retry after the WAIT
// that followed it lost its connection finds those bits set, and must not
// turn the items it reported new into "not new" (dedup would drop lines it
// never printed). Answers are ORed over the attempts. And when the caller
// wants the answers (b.out), an attempt sent in full whose answer was lost is
// not sent again: it may have run, and its retry would answer "not new" for
// what it added (AnswersLostStatus); the chunks answered before it stand
// (b.accepted).
Status RedisBitStore::AddBatch(const Cells& cells, PartBatch& b) {
  if (b.out != nullptr) std::fill(b.out, b.out + b.items, 0);
  if (uint64_t{b.items} * b.k <= kSmallAddOps) return AddSmall(cells, b);
  const size_t batch = shared_->options.batch_items;
  std::vector<Chunk> chunks;
  for (size_t first = 0; first < b.items; first += batch) {
    // Not owning: the caller holds `cells` for the whole batch.
    chunks.push_back(
        Chunk{&b, CellsPtr(CellsPtr(), &cells), first, std::min(batch, b.items - first), {}});
  }
  size_t done = 0;
  // Added items whose count update has not been sent: the last call's, and
  // then each transaction's until the next one's guard carries it.
  uint64_t uncounted = cells.pending.exchange(0);
  Status s = shared_->source->Run(
      cells.meta, Access::kMaster, /*idempotent=*/!cells.counting(), [&](Connection& c) {
        bool unread = false;
        Status added = AddOn(c, cells, b, chunks, &done, &uncounted, &unread);
        if (unread && AnswersLost(c, b, added)) return AnswersLostStatus(c.server().display, added);
        if (added.ok() && uncounted != 0) {
          // The last transaction's count goes out at once, without
          // waiting for its answer (the pool reads it later): other
          // clients see the count as soon as the add returns, at the
          // price of one more small command per call (~10-25 us of
          // server time here; nothing at batch 1000).
          CommandBuffer cmd;
          AppendCount(&cmd, cells, uncounted);
          if (c.Append(cmd).ok() && c.Flush().ok()) {
            c.OweReply();
            uncounted = 0;
          }
        }
        if (!added.ok()) return added;
        Status waited = WaitForReplicas(c, *shared_);
        // The chunks may be on this server alone: a retry (after a
        // failover, on the new master) sends them again, not only
        // another WAIT, which there would confirm nothing of them. Nor are
        // they confirmed to the caller: answers read before the WAIT stand
        // for the bits (ORed, as above), but no item is accepted until one
        // succeeds (as AddSmall).
        if (!waited.ok()) done = 0;  // and no item is accepted (below)
        return waited;
      });
  // What could not be sent rides with this handle's next command.
  cells.pending += uncounted;
  // With wait_replicas an item is confirmed by a WAIT, and a call that
  // failed before one (a lost connection, a later chunk refused) confirmed
  // none: the chunks answered before the failure are on this server alone.
  if (!s.ok() && shared_->wait_replicas > 0) b.accepted = 0;
  return s;
}

// A few items: one script (kAddSmall), which also carries the count.
Status RedisBitStore::AddSmall(const Cells& cells, PartBatch& b) {
  const uint64_t uncounted = b.capacity != 0 ? 0 : cells.pending.exchange(0);
  bool refused = false;
  // Each attempt's answers, ORed into b.out once read (see AddBatch).
  uint8_t answers[kSmallAddOps];
  Status s = shared_->source->Run(
      cells.meta, Access::kMaster, /*idempotent=*/!cells.counting(), [&](Connection& c) -> Status {
        refused = false;
        Status e = EvalPerItem(
            c, cells, scripts::kAddSmall, "the small add script", 7,
            [&](CommandBuffer& cmd) {
              cmd.Arg(uncounted);
              cmd.Arg(cells.count_field);
              cmd.Arg(uint64_t{b.k});
              cmd.Arg(cells.counting() ? "1" : "0");
              cmd.Arg(cells.bytes);
              cmd.Arg(b.capacity);
              cmd.Arg(cells.scratch);
            },
            b.offsets, b.items, b.k, b.out == nullptr ? nullptr : answers, &b.room, &refused);
        if (c.wrote() && AnswersLost(c, b, e)) return AnswersLostStatus(c.server().display, e);
        if (!e.ok() || refused) return e;
        for (size_t i = 0; b.out != nullptr && i < b.items; ++i) {
          b.out[i] |= answers[i];
        }
        return WaitForReplicas(c, *shared_);
      });
  if (!s.ok() || refused) {
    // A count the script may not have applied rides with the next command.
    cells.pending += uncounted;
  }
  if (refused) {
    b.refused = true;
    b.accepted = 0;
    return Status::Ok();
  }
  if (s.ok()) b.accepted = b.items;
  return s;
}

// Adds the chunks [*done, end) of one batch on one connection, advancing
// *done past every chunk whose answer was read. With a capacity one chunk is
// in flight at a time, so that a refused chunk is never followed by an
// accepted one (a batch is accepted as a prefix).
Status RedisBitStore::AddOn(Connection& c, const Cells& cells, PartBatch& b,
                            std::vector<Chunk>& chunks, size_t* done, uint64_t* uncounted,
                            bool* unread) {
  CommandBuffer cmd;  // hiredis copies each command, so one buffer serves all
  const size_t window = b.capacity != 0 ? 1 : kMaxInFlight;
  size_t next = *done;
  auto send = [&]() -> Status {
    Chunk& chunk = chunks[next];
    SortedOrder(b.offsets + chunk.first * b.k, chunk.n * b.k, &chunk.order);
    // The count of earlier transactions rides along with this one's guard.
    // If this transaction's answer is lost but it ran, a retry sends that
    // count again: the one way the count can over-count.
    const uint64_t delta = *uncounted;
    *uncounted = 0;
    chunk.count_delta = delta;
    if (Status sent = SendAdd(c, cmd, cells, chunk, delta); !sent.ok()) {
      *unread = next > *done;  // earlier chunks went out whole, unanswered
      return sent;
    }
    ++next;
    return Status::Ok();
  };
  while (next < chunks.size() && next - *done < window) REDBLOOM_RETURN_IF_ERROR(send());
  while (*done < chunks.size()) {
    bool refused = false;
    Status s = ReadAdd(c, cells, b, chunks[*done], uncounted, &refused);
    if (!s.ok()) {
      *unread = true;  // this chunk, and any after it, went out whole
      ReadAddsLeft(c, cells, b, chunks, *done + 1, next, uncounted);
      return s;
    }
    if (refused) {
      b.refused = true;
      b.accepted = chunks[*done].first;
      ReadAddsLeft(c, cells, b, chunks, *done + 1, next, uncounted);
      *done = chunks.size();
      return Status::Ok();
    }
    ++*done;
    b.accepted = chunks[*done - 1].first + chunks[*done - 1].n;
    if (next < chunks.size()) REDBLOOM_RETURN_IF_ERROR(send());
  }
  return Status::Ok();
}

// Builds and sends one add transaction, streaming it (see Streamer).
Status RedisBitStore::SendAdd(Connection& c, CommandBuffer& cmd, const Cells& cells,
                              const Chunk& chunk, uint64_t count_delta) {
  const PartBatch& b = *chunk.batch;
  const uint64_t* offsets = b.offsets + chunk.first * b.k;
  const size_t count = chunk.n * b.k;
  cmd.Clear();
  Streamer stream(c, cmd);
  cmd.Command({"MULTI"});
  BeginEval(&cmd, scripts::kAddGuard,
            ScriptKeys({cells.meta, cells.bitmap, cells.scratch, cells.count_hash}), kChecked + 5);
  for (const auto& v : cells.checked) cmd.Arg(v);
  cmd.Arg(count_delta);
  cmd.Arg(cells.count_field);
  cmd.Arg(cells.bytes);
  cmd.Arg(uint64_t{chunk.n});
  cmd.Arg(b.capacity);
  if (cells.counting()) {
    // SAT: a counter stops at 15 instead of wrapping to 0 (a false negative).
    cmd.Begin(4 + 4 * count);
    cmd.Arg("BITFIELD");
    cmd.Arg(cells.scratch);
    cmd.Arg("OVERFLOW");
    cmd.Arg("SAT");
    for (size_t i = 0; i < count; ++i) {
      cmd.Raw(kIncrU4, 2);
      cmd.Arg('#', offsets[chunk.order[i]]);
      cmd.Raw(kOne, 1);
      if (i % 256 == 255) REDBLOOM_RETURN_IF_ERROR(stream.MaybePush());
    }
  } else {
    cmd.Begin(2 + 4 * count);
    cmd.Arg("BITFIELD");
    cmd.Arg(cells.scratch);
    for (size_t i = 0; i < count; ++i) {
      cmd.Raw(kSetU1, 2);
      cmd.Arg(offsets[chunk.order[i]]);
      cmd.Raw(kOne, 1);
      if (i % 256 == 255) REDBLOOM_RETURN_IF_ERROR(stream.MaybePush());
    }
  }
  BeginEval(&cmd, scripts::kAddCommit, ScriptKeys({cells.meta, cells.bitmap, cells.scratch}),
            kChecked + 1);
  for (const auto& v : cells.checked) cmd.Arg(v);
  cmd.Arg(cells.bytes);
  cmd.Command({"EXEC"});
  return stream.Finish();
}

// The transactions [from, to) that went out after one that failed or was
// refused: each is read as its own (a Redis at maxmemory refuses them all,
// one that came back may take some), so that the count of earlier
// transactions one carried goes back to *uncounted when its guard did not
// run, and the items one added are counted. A count went missing for good
// with every transaction in flight behind a refused one (an audit: 2,000 of
// 67,001 adds). On a connection that breaks, what is left is unknown.
void RedisBitStore::ReadAddsLeft(Connection& c, const Cells& cells, PartBatch& b,
                                 std::vector<Chunk>& chunks, size_t from, size_t to,
                                 uint64_t* uncounted) {
  for (size_t i = from; i < to && !c.broken(); ++i) {
    bool refused = false;
    (void)ReadAdd(c, cells, b, chunks[i], uncounted, &refused);
  }
}

// Reads one add transaction. One whose guard is known not to have run (the
// transaction refused as queued, or the guard's error reply) gives back the
// count it carried (chunk.count_delta) to *uncounted.
Status RedisBitStore::ReadAdd(Connection& c, const Cells& cells, PartBatch& b, const Chunk& chunk,
                              uint64_t* uncounted, bool* refused) {
  bool discarded = false;
  Result<ReplyPtr> read = ReadTransaction(c, 3, &discarded);
  if (!read.ok()) {
    if (discarded) *uncounted += chunk.count_delta;  // EXECABORT: nothing ran
    return read.status();
  }
  const ReplyPtr exec = std::move(read).value();
  const redisReply* guard = exec->element[0];
  const redisReply* bits = exec->element[1];
  const redisReply* commit = exec->element[2];
  if (guard->type == REDIS_REPLY_ERROR) {
    *uncounted += chunk.count_delta;  // every refusal returns before the count's HINCRBY
    if (Contains(ReplyText(guard), "REDBLOOM_FULL")) {
      *refused = true;
      b.room = NumberAfter(ReplyText(guard), "REDBLOOM_FULL");
      return Status::Ok();
    }
    return ScriptError(c, cells, guard);
  }
  if (bits->type == REDIS_REPLY_ERROR) return BitmapError(c, cells, bits);
  if (commit->type == REDIS_REPLY_ERROR && Contains(ReplyText(commit), scripts::kMetadataChanged)) {
    return ScriptError(c, cells, commit);  // gone between the guard and the commit
  }
  if (commit->type == REDIS_REPLY_ERROR) {
    // The bitmap, with this batch's bits, waits at the scratch key; the next
    // add's guard puts it back (checks until then fail data_loss).
    return ScriptError(c, cells, commit)
        .WithContext(
            "the add's commit failed: the filter's bits, this batch's included, wait at its "
            "scratch key, and its next add or remove puts them back (checks fail data_loss "
            "until then)");
  }
  if (commit->type != REDIS_REPLY_INTEGER || commit->integer != 1) {
    return Unexpected("the add transaction's commit", commit);
  }
  const uint32_t k = b.k;
  if (!IsArray(bits, chunk.n * k)) return Unexpected("BITFIELD", bits);
  if (guard->type == REDIS_REPLY_INTEGER) b.room = static_cast<uint64_t>(guard->integer);
  // BITFIELD SET answers each bit's previous value, INCRBY each counter's new
  // one: an item is new when it turned at least one cell on. The ops ran in
  // chunk.order, where ops on one cell keep batch order, so of two items
  // sharing a bit the earlier one sees it unset: "new" is as if the items
  // were added one by one. turned_on is back in batch order.
  const long long fresh = cells.counting() ? 1 : 0;
  std::vector<uint8_t> turned_on(chunk.n * k);
  for (size_t i = 0; i < chunk.n * k; ++i) {
    turned_on[chunk.order[i]] = bits->element[i]->integer == fresh ? 1 : 0;
  }
  uint64_t added = 0;
  for (size_t i = 0; i < chunk.n; ++i) {
    bool was_new = false;
    for (uint32_t j = 0; j < k; ++j) was_new |= turned_on[i * k + j] != 0;
    if (b.out != nullptr && was_new) b.out[chunk.first + i] = 1;  // ORed: see AddBatch
    // Counting filters count every add, since each needs its own remove.
    added += (was_new || cells.counting()) ? 1 : 0;
  }
  // With a capacity the guard already counted every item (a reservation).
  if (b.capacity == 0) *uncounted += added;
  return Status::Ok();
}

// EVAL of a script that works on the cells item by item (kAddSmall,
// kRemove). KEYS: meta, cells, count hash. ARGV: the seven checked fields,
// the `extra_args` that `extras` appends, then `n` items' k offsets each. The
// script answers one '0'/'1' per item (as a string, or as {string, room}),
// copied to out[0, n) if given. REDBLOOM_FULL sets *full and *room.
template <typename Extras>
Status RedisBitStore::EvalPerItem(Connection& c, const Cells& cells, std::string_view script,
                                  std::string_view what, size_t extra_args, Extras&& extras,
                                  const uint64_t* offsets, size_t n, uint32_t k, uint8_t* out,
                                  uint64_t* room, bool* full) const {
  CommandBuffer cmd;
  BeginEval(&cmd, script, ScriptKeys({cells.meta, cells.bitmap, cells.count_hash}),
            kChecked + extra_args + n * k);
  for (const auto& v : cells.checked) cmd.Arg(v);
  extras(cmd);
  for (size_t i = 0; i < n * k; ++i) cmd.Arg(offsets[i]);
  REDBLOOM_RETURN_IF_ERROR(c.Append(cmd));
  REDBLOOM_ASSIGN_OR_RETURN(ReplyPtr r, c.Read());
  if (r->type == REDIS_REPLY_ERROR) {
    if (full != nullptr && Contains(ReplyText(r.get()), "REDBLOOM_FULL")) {
      *full = true;
      *room = NumberAfter(ReplyText(r.get()), "REDBLOOM_FULL");
      return Status::Ok();
    }
    return ScriptError(c, cells, r.get());
  }
  const redisReply* flags = r.get();
  if (IsArray(r.get(), 2)) {
    flags = r->element[0];
    if (room != nullptr && r->element[1]->type == REDIS_REPLY_INTEGER) {
      *room = static_cast<uint64_t>(r->element[1]->integer);
    }
  }
  if (flags->type != REDIS_REPLY_STRING || flags->len != n) return Unexpected(what, r.get());
  if (out != nullptr) {
    for (size_t i = 0; i < n; ++i) out[i] = flags->str[i] == '1' ? 1 : 0;
  }
  return Status::Ok();
}

// ---- Removes ----------------------------------------------------------------

// Not retried: removing twice could take away another add of the item.
Status RedisBitStore::Remove(std::span<PartBatch> batches) {
  std::vector<std::string> keys;
  std::vector<std::function<Status()>> tasks;
  for (PartBatch& b : batches) {
    REDBLOOM_ASSIGN_OR_RETURN(CellsPtr cells, CellsOf(b.part));
    if (!cells->counting()) {
      // KindPolicy::Remove refuses first, naming the filter and its kind.
      return Status::Unimplemented("items can be removed only from counting filters");
    }
    REDBLOOM_RETURN_IF_ERROR(CheckBatch(*cells, b));
    if (b.items == 0) continue;
    keys.push_back(cells->meta);
    tasks.push_back([this, cells, &b] { return RemoveBatch(*cells, b); });
  }
  if (tasks.size() == 1) return tasks.front()();
  return shared_->source->InParallel(keys, tasks, ConnectionSource::OnFailure::kStopThatServer);
}

Status RedisBitStore::RemoveBatch(const Cells& cells_ref, PartBatch& b) {
  const Cells* cells = &cells_ref;
  // Batches already removed: a run that the source repeats (a MOVED, ASK,
  // TRYAGAIN or CLUSTERDOWN redirect, a READONLY from a demoted master: none
  // of them ran the command that drew it) resumes at the first batch not
  // done. Starting over removed again whatever of the done batches still
  // read present (an item whose cells other items share), and during a slot
  // migration drew the same MOVED at the same batch every time, until the
  // remove failed after kMaxRedirects.
  size_t done = 0;
  {
    Status removed = shared_->source->Run(
        cells->meta, Access::kMaster, /*idempotent=*/false, [&](Connection& c) -> Status {
          // Pending adds are counted first, so the removes below never take
          // the stored count under what this handle added.
          if (const uint64_t uncounted = cells->pending.exchange(0); uncounted != 0) {
            CommandBuffer count;
            AppendCount(&count, *cells, uncounted);
            Status s = Call(c, count).status();
            if (!s.ok()) {
              cells->pending += uncounted;
              return s;
            }
          }
          // One script per batch: the server runs ~2 commands per item in Lua.
          const size_t batch = shared_->options.batch_items;
          while (done < b.items) {
            const size_t first = done;
            const size_t n = std::min(batch, b.items - first);
            REDBLOOM_RETURN_IF_ERROR(EvalPerItem(
                c, *cells, scripts::kRemove, "remove", 4,
                [&](CommandBuffer& cmd) {
                  cmd.Arg(cells->count_field);
                  cmd.Arg(uint64_t{b.k});
                  cmd.Arg(cells->bytes);
                  cmd.Arg(cells->scratch);
                },
                b.offsets + first * b.k, n, b.k, b.out == nullptr ? nullptr : b.out + first,
                nullptr, nullptr));
            done += n;
          }
          return Status::Ok();
        });
    if (!removed.ok()) return removed;
  }
  return Status::Ok();
}

}  // namespace redbloom::internal
