// add, check and remove (items_command.h).
#include "items_command.h"

#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "item_reader.h"
#include "redbloom/bloom_filter.h"
#include "stop_signals.h"

namespace redbloom::cli {

namespace {

// Items are read and written in chunks of this many, so a file of any size
// streams through bounded memory while each chunk is still one batch.
constexpr size_t kChunkItems = 65536;

// add/check/remove --json: one document, written as the items go so a file of
// any size streams through bounded memory:
//   {"filter":"orders","items":[
//   {"item":"ORD-1","new":true},
//   ...
//   ],"count":2,"new":1}
// The per-item key and the counts: add "new"; check "present" and "absent";
// remove "removed" and "not_removed". An error once the filter is open still
// ends the document, with the items done before it and "error":{"code",
// "message"}, plus "unconfirmed":N when the call that failed may have
// written some of its N items before it failed (a store error, or a scaling
// filter out of layers, part-way through a chunk). Items that are not UTF-8 (a bytes filter) show
// U+FFFD for each bad byte, as JSON can only hold text.
class JsonItemsWriter {
 public:
  JsonItemsWriter(const std::string& filter, ItemOp op) : op_(op) {
    std::cout << "{\"filter\":" << Quote(filter) << ",\"items\":[";
  }

  // The text of a chunk's items, for the caller to write.
  [[nodiscard]] std::string Chunk(const std::vector<std::string>& items,
                                  const std::vector<uint8_t>& answers) {
    const char* key = op_ == ItemOp::kAdd ? "new" : op_ == ItemOp::kCheck ? "present" : "removed";
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      out += count_ + i == 0 ? "\n{\"item\":" : ",\n{\"item\":";
      out += Quote(items[i]);
      out += ",\"";
      out += key;
      out += answers[i] ? "\":true}" : "\":false}";
      yes_ += answers[i] ? 1 : 0;
    }
    count_ += items.size();
    return out;
  }

  // The document's end, for the caller to write.
  [[nodiscard]] std::string End(const Status& error, uint64_t unconfirmed = 0) const {
    std::string out = "\n],\"count\":" + std::to_string(count_);
    switch (op_) {
      case ItemOp::kAdd:
        out += ",\"new\":" + std::to_string(yes_);
        break;
      case ItemOp::kCheck:
        out +=
            ",\"present\":" + std::to_string(yes_) + ",\"absent\":" + std::to_string(count_ - yes_);
        break;
      case ItemOp::kRemove:
        out += ",\"removed\":" + std::to_string(yes_) +
               ",\"not_removed\":" + std::to_string(count_ - yes_);
        break;
    }
    if (!error.ok()) {
      out += ",\"error\":{\"code\":" + Quote(std::string(StatusCodeName(error.code())));
      if (error.reason() != StatusReason::kNone) {
        out += ",\"reason\":" + Quote(std::string(StatusReasonName(error.reason())));
      }
      out += ",\"message\":" + Quote(error.message()) + "}";
      if (unconfirmed > 0) out += ",\"unconfirmed\":" + std::to_string(unconfirmed);
    }
    return out + "}\n";
  }

 private:
  static std::string Quote(const std::string& text) {
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

  ItemOp op_;
  uint64_t count_ = 0;
  uint64_t yes_ = 0;
};

// add, check and remove share everything but the call and the meaning of "0".
// One run: reads chunks of items, makes one call per chunk, prints its
// answers, and says on any stop what was done before it.
class ItemsRun {
 public:
  ItemsRun(BloomFilter& filter, ItemReader& source, const std::string& name, bool quiet, bool json,
           ItemOp op)
      : filter_(filter),
        source_(source),
        name_(name),
        op_(op),
        quiet_(quiet),
        answering_(json || !quiet),
        revalidator_(filter) {
    if (json) json_out_.emplace(name, op);
    // An add or remove stopped by SIGINT, SIGTERM or SIGHUP ends after the
    // chunk in hand, its answers printed and the filter synced: killed, it
    // left the adds it had printed unsynced (a file: store's pages), where
    // the README says a run syncs before it exits.
    if (op != ItemOp::kCheck) {
      stop_signals_.emplace();
      source_.set_stop(&g_stop_signal);
    }
    // Without answers to write, a closed stdout is no reason to stop. With
    // them, a chunk also ends when no more input is ready, so answers to a
    // pipe that stalls (`tail -f log | redbloom check`) come as lines arrive,
    // not after 65,536 of them; a quiet add keeps whole chunks.
    if (answering_) source_.set_output(1);
  }

  int Run() {
    while (true) {
      if (Signalled()) return Stopped();
      auto more = source_.Next(&chunk_, kChunkItems, /*streaming=*/answering_);
      if (!more.ok()) return Signalled() ? Stopped() : Stop(more.status());
      if (!*more) break;
      if (Status s = revalidator_.Due(); !s.ok()) return Stop(s);
      if (std::optional<int> rc = DoChunk(); rc) return *rc;
    }
    return Finish();
  }

 private:
  const char* Verb() const {
    return op_ == ItemOp::kCheck ? "check" : op_ == ItemOp::kAdd ? "add" : "remove";
  }

  // A stop signal came, and this run (an add or remove) stops for it.
  bool Signalled() const { return g_stop_signal != 0 && stop_signals_.has_value(); }

  // The call for the chunk in hand, and its answers printed. Returns the
  // exit code if the run ends here.
  std::optional<int> DoChunk() {
    views_.assign(chunk_.begin(), chunk_.end());
    // A quiet add asks for no answers, so the store may send again an add
    // whose answer a lost connection took (it cannot tell what was new then).
    answers_.clear();
    Status s = op_ == ItemOp::kCheck ? filter_.ContainsMany(views_, &answers_)
               : op_ == ItemOp::kAdd ? filter_.AddMany(views_, answering_ ? &answers_ : nullptr)
                                     : filter_.RemoveMany(views_, &answers_);
    if (!s.ok()) return CallFailed(s);
    if (Status wrote = Report(); !wrote.ok()) {
      // A stop signal that came while the answers were written (to a reader
      // that stalled) cut the write short: the run was stopped, as it says,
      // not failed (exit 3 blamed stdout).
      return Signalled() ? Stopped(wrote) : Stop(wrote);
    }
    for (uint8_t a : answers_) any_absent_ |= (a == 0);
    return std::nullopt;
  }

  int CallFailed(const Status& s) {
    // A bad item is named by its place in the input (a line number); it
    // failed the call before anything was written.
    if (s.code() == StatusCode::kInvalidArgument) {
      return Stop(source_.Locate(s, filter_.config().encoding, chunk_));
    }
    // Refused before anything was written: the filter cannot do it (a
    // remove on a filter that does not count), or is not there.
    if (s.code() == StatusCode::kUnimplemented || s.code() == StatusCode::kNotFound ||
        s.code() == StatusCode::kTooLarge) {
      return Stop(s.WithContext(Verb()));
    }
    // An add keeps the answers of the items the store confirmed before it
    // failed (BloomFilter::AddMany): they are reported, as done.
    const size_t confirmed = answers_.size();
    if (op_ == ItemOp::kAdd && confirmed > 0) {
      chunk_.resize(confirmed);
      (void)Report();  // the store's error is the one to say
    }
    // A store's failure names the filter: a script that touches many
    // filters learns which one failed.
    return Stop(s.WithContext(std::string(Verb()) + " '" + name_ + "'"), views_.size() - confirmed);
  }

  // Prints (or adds to the JSON) each item of the chunk with its answer, and
  // counts the chunk as done. A write that fails is the run's error: it
  // names the items whose answers may be lost (the chunk is done all the
  // same: an add or remove has happened).
  Status Report() {
    Status wrote;
    if (json_out_) {
      wrote = WriteStdout(json_out_->Chunk(chunk_, answers_));
    } else if (!quiet_) {
      out_.clear();
      for (size_t i = 0; i < chunk_.size(); ++i) {
        out_ += answers_[i] ? "1\t" : "0\t";
        out_ += chunk_[i];
        out_ += '\n';
      }
      wrote = WriteStdout(out_);
    }
    done_ += chunk_.size();
    if (wrote.ok() || chunk_.empty()) return wrote;
    return wrote.WithSuffix("; the answers for " + source_.Where(0) + " to " +
                            source_.Where(chunk_.size() - 1) + " may not have been written" +
                            (op_ == ItemOp::kAdd      ? ", though those items were added"
                             : op_ == ItemOp::kRemove ? ", though those items were removed"
                                                      : ""));
  }

  // Stops the run: says what was done before the error, ends the JSON.
  // `unconfirmed`: items of the failed call that it may have written before
  // failing (a bad item fails its call before anything is written).
  int Stop(const Status& s, uint64_t unconfirmed = 0) {
    if (op_ == ItemOp::kCheck) unconfirmed = 0;
    const std::string what = DoneBefore(unconfirmed);
    if (!what.empty()) {
      std::cerr << "redbloom: " << OneLine(what) << "; nothing after "
                << (done_ + unconfirmed == 1 ? "it" : "them") << " was"
                << (op_ == ItemOp::kAdd ? " (adding again is harmless)" : "") << "\n";
    }
    if (json_out_) (void)WriteStdout(json_out_->End(s, unconfirmed));
    const bool wrote = op_ != ItemOp::kCheck && (done_ > 0 || unconfirmed > 0);
    return wrote ? FailAfterWrites(s, filter_) : Fail(s);
  }

  // "the first 2 items were added, and some of the next 5 may have been",
  // or "" when nothing was done.
  std::string DoneBefore(uint64_t unconfirmed) const {
    const std::string verb = op_ == ItemOp::kAdd ? "added" : "processed";
    // "the first item was", "the first 2 items were".
    const auto items = [](uint64_t n) {
      return n == 1 ? std::string("item") : std::to_string(n) + " items";
    };
    const std::string first =
        "the first " + items(done_) + (done_ == 1 ? " was " : " were ") + verb;
    if (done_ > 0 && unconfirmed > 0) {
      return first + ", and " +
             (unconfirmed == 1 ? "the next item"
                               : "some of the next " + std::to_string(unconfirmed)) +
             " may have been";
    }
    if (done_ > 0) return first;
    if (unconfirmed > 0) {
      return (unconfirmed == 1 ? "the first item" : "some of the first " + items(unconfirmed)) +
             " may have been " + verb;
    }
    return "";
  }

  // Ends a run stopped by a signal, after the chunk in hand. `unwritten`:
  // the write of the last answers that the signal cut short.
  int Stopped(const Status& unwritten = Status::Ok()) {
    const int sig = g_stop_signal;
    Status synced = filter_.Flush();
    std::cerr << "redbloom: " << (op_ == ItemOp::kAdd ? "add to " : "remove from ") << name_
              << " stopped by signal " << sig << " after " << done_
              << (done_ == 1 ? " item" : " items") << (synced.ok() ? ", synced" : "")
              << "; nothing after " << (done_ == 1 ? "it" : "them") << " was "
              << (op_ == ItemOp::kAdd ? "added" : "removed") << "\n";
    if (!unwritten.ok()) std::cerr << "redbloom: " << OneLine(unwritten.message()) << "\n";
    if (!synced.ok()) {
      std::cerr << "redbloom: error: and what was written may not be durable: "
                << OneLine(synced.message()) << " " << CodeTag(synced) << "\n";
    }
    if (json_out_) {
      (void)WriteStdout(
          json_out_->End(Status::Unavailable("stopped by signal " + std::to_string(sig))));
    }
    return 128 + sig;
  }

  // Every item done: syncs what an add or remove wrote, ends the output.
  int Finish() {
    if (op_ != ItemOp::kCheck) {
      if (Status s = filter_.Flush(); !s.ok()) {
        if (json_out_) (void)WriteStdout(json_out_->End(s));
        return Fail(s);
      }
    }
    if (Status wrote = json_out_ ? WriteStdout(json_out_->End(Status::Ok())) : FlushStdout();
        !wrote.ok()) {
      return Fail(wrote.WithSuffix(op_ == ItemOp::kAdd      ? "; every item was added"
                                   : op_ == ItemOp::kRemove ? "; every item was removed"
                                                            : ""));
    }
    return op_ != ItemOp::kAdd && any_absent_ ? kExitAbsent : 0;
  }

  BloomFilter& filter_;
  ItemReader& source_;
  const std::string& name_;
  const ItemOp op_;
  const bool quiet_;
  const bool answering_;  // answers are printed (text or JSON)
  std::optional<JsonItemsWriter> json_out_;
  std::optional<StopSignals> stop_signals_;
  Revalidator revalidator_;
  std::vector<std::string> chunk_;
  std::vector<std::string_view> views_;
  std::vector<uint8_t> answers_;
  std::string out_;    // a chunk's text answers
  uint64_t done_ = 0;  // items whose call succeeded (and answers were printed)
  bool any_absent_ = false;
};

}  // namespace

int RunItems(Context& ctx, const std::string& name, const std::vector<std::string>& args,
             const std::string& file, bool quiet, bool json, ItemOp op) {
  if (args.empty() && file.empty()) {
    return Fail(Status::InvalidArgument("no items: give them as arguments or with --file PATH|-"));
  }
  ItemReader source(args, file);
  if (Status s = source.Open(); !s.ok()) return Fail(s);
  if (Status s = ctx.OpenStore(); !s.ok()) return Fail(s);
  auto filter = BloomFilter::Open(*ctx.store, name);
  if (!filter.ok()) return Fail(filter.status());
  return ItemsRun(**filter, source, name, quiet, json, op).Run();
}

}  // namespace redbloom::cli
