// tools/report/trace_check_walk.cpp — see trace_check_walk.hpp. The walker is a SAX handler
// rather than a DOM parse because (a) memory must not grow with the trace and (b) the
// precision rule ("at most 6 decimals") is about the *text* of ts/dur, which a DOM
// parser throws away.
#include "tools/report/trace_check_walk.hpp"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace ls::tools::trace_check_detail {

int effective_decimals(const std::string& s) {
  std::size_t e = s.find_first_of("eE");
  std::string mant = s.substr(0, e);
  long exp = 0;
  if (e != std::string::npos) exp = std::strtol(s.c_str() + e + 1, nullptr, 10);  // saturates, unlike atoi
  exp = std::clamp(exp, -100000L, 100000L);
  long dec = 0;
  if (auto dot = mant.find('.'); dot != std::string::npos) {
    // trailing zeros do not add precision
    std::size_t last = mant.find_last_not_of('0');
    dec = last > dot ? static_cast<long>(last - dot) : 0;
  }
  return static_cast<int>(std::clamp(dec - exp, 0L, 1000000L));
}

namespace {

// Depths count the containers open around a value: the root object's members are at
// depth 1, traceEvents entries at 2, an event's fields at 3, args' members at 4.
constexpr int kEntryDepth = 2;

class Walker : public nlohmann::json_sax<json> {
public:
  explicit Walker(TraceSink& sink) : sink_(sink) {}
  WalkResult result;

  bool null() override { return scalar(nullptr); }
  bool boolean(bool v) override { return scalar(v); }
  bool number_integer(number_integer_t v) override { return scalar(v); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(v); }
  bool number_float(number_float_t v, const string_t& s) override {
    if (building() && stack_.size() == 1 && (key_ == "ts" || key_ == "dur") && effective_decimals(s) > 6)
      sink_.precision(result.events, key_, s);
    return scalar(v);
  }
  bool string(string_t& v) override {
    const bool unit_ok = depth_ == 1 && root_key_ == "displayTimeUnit" && (v == "ms" || v == "ns");
    scalar(std::move(v));
    if (unit_ok) unit_ok_ = true;  // after scalar(), which marks the unit seen and not yet ok
    return true;
  }
  bool binary(binary_t&) override { return scalar(nullptr); }

  bool start_object(std::size_t) override {
    open_value();
    if (depth_ == 0) result.root_object = true;
    if (depth_ == kEntryDepth && in_events_) {
      event_ = json::object();
      stack_.assign(1, &event_);
    } else if (building()) {
      push(json::object());
    }
    ++depth_;
    return true;
  }
  bool end_object() override {
    --depth_;
    if (building()) {
      stack_.pop_back();
      if (stack_.empty()) {  // the entry closed: check it, then let it go
        sink_.event(result.events, event_);
        event_ = json();
        ++result.events;
      }
    }
    return true;
  }
  bool start_array(std::size_t) override {
    open_value();
    if (depth_ == 1 && result.root_object && root_key_ == "traceEvents") {
      if (!result.events_array) {
        result.events_array = true;
        in_events_ = true;
      } else {
        result.duplicate_events = true;
      }
    } else if (depth_ == kEntryDepth && in_events_ && !building()) {
      sink_.not_object(result.events++);  // an array entry: its contents are not read
    } else if (building()) {
      push(json::array());
    }
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    if (building()) stack_.pop_back();
    if (depth_ == 1 && in_events_) in_events_ = false;  // only the first events array is walked
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) root_key_ = k;
    if (building()) key_ = k;
    return true;
  }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& ex) override {
    result.parse_error = fmt::format("not valid JSON at byte {}: {}", pos, ex.what());
    return false;
  }

  void finish() { result.time_unit_bad = unit_seen_ && !unit_ok_; }

private:
  TraceSink& sink_;
  int depth_ = 0;
  std::string root_key_;  // last key of the root object
  std::string key_;       // last key inside the event being built
  bool in_events_ = false;
  bool unit_seen_ = false, unit_ok_ = false;
  json event_;
  std::vector<json*> stack_;  // containers of event_ still open (event_ first)

  bool building() const { return !stack_.empty(); }

  // Bookkeeping common to every value: the root's shape, displayTimeUnit, and entries
  // of traceEvents that are not objects.
  void open_value() {
    if (depth_ == 1 && root_key_ == "displayTimeUnit") {
      unit_seen_ = true;
      unit_ok_ = false;  // a string() that follows sets it
    }
  }
  bool scalar(json v) {
    open_value();
    if (depth_ == kEntryDepth && in_events_ && !building()) {
      sink_.not_object(result.events++);
      return true;
    }
    if (building()) place(std::move(v));
    return true;
  }
  void push(json v) {
    // Containers inside an event's fields (other than the members of "args") are
    // kept empty: no rule reads them.
    const bool keep = stack_.size() == 1 && key_ == "args";
    json* slot = place(std::move(v));
    if (keep) {
      stack_.push_back(slot);
    } else {
      stack_.push_back(&sink_slot_);  // a scratch container that swallows the contents
      sink_slot_ = json();
    }
  }
  json* place(json v) {
    json* top = stack_.back();
    if (top == &sink_slot_) return top;  // contents of an unread container
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    json& slot = (*top)[key_];
    slot = std::move(v);
    return &slot;
  }
  json sink_slot_;
};

}  // namespace

WalkResult walk_trace(std::istream& in, TraceSink& sink) {
  Walker w(sink);
  w.result.parsed = json::sax_parse(in, &w);
  if (!w.result.parsed && w.result.parse_error.empty()) w.result.parse_error = "not valid JSON";
  w.finish();
  return std::move(w.result);
}

// ---------------------------------------------------------------- GzInputBuf

GzInputBuf::GzInputBuf(int fd, std::string name, bool gz_name, std::uint64_t max_bytes)
    : name_(std::move(name)), gz_name_(gz_name), max_bytes_(max_bytes), buf_(std::size_t{1} << 16) {
  seekable_ = ::lseek(fd, 0, SEEK_CUR) != -1;
  gz_ = gzdopen(fd, "rb");
  if (!gz_) {
    ::close(fd);
    error_ = "cannot start gzip decompression";
  }
}

GzInputBuf::~GzInputBuf() {
  // gzclose only frees zlib's buffers and closes the descriptor: it reports, never throws.
  if (gz_) gzclose(static_cast<gzFile>(gz_));
}

GzInputBuf::int_type GzInputBuf::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (!error_.empty() || !gz_) return traits_type::eof();
  auto* gz = static_cast<gzFile>(gz_);
  // A chunk that only continues a run of whitespace leaves nothing: read the next.
  for (;;) {
    errno = 0;
    const int n = gzread(gz, buf_.data(), static_cast<unsigned>(buf_.size()));
    if (n < 0) {
      int zerr = 0;
      const char* msg = gzerror(gz, &zerr);
      error_ = zerr == Z_ERRNO ? std::string(std::strerror(errno)) : fmt::format("corrupt gzip data ({})", msg ? msg : "?");
      return traits_type::eof();
    }
    if (n == 0) return traits_type::eof();
    if (total_ + static_cast<std::uint64_t>(n) > max_bytes_) {
      error_ = fmt::format("more than the limit of {} bytes{} (check-trace's bound on its input, so that /dev/zero or a "
                           "gzip bomb ends rather than running for ever)",
                           max_bytes_, gz_name_ ? " once decompressed" : "");
      return traits_type::eof();
    }
    total_ += static_cast<std::uint64_t>(n);
    const std::size_t kept = squeeze(static_cast<std::size_t>(n));
    if (kept == 0) continue;
    handed_ += kept;
    setg(buf_.data(), buf_.data(), buf_.data() + kept);
    return traits_type::to_int_type(buf_[0]);
  }
}

std::size_t GzInputBuf::squeeze(std::size_t n) {
  std::size_t out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = buf_[i];
    if (in_string_) {
      if (escaped_) escaped_ = false;
      else if (c == '\\') escaped_ = true;
      else if (c == '"') in_string_ = false;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (space_run_ >= kKeptSpaces) continue;
      ++space_run_;
    } else {
      space_run_ = 0;
      if (c == '"') in_string_ = true;
    }
    buf_[out++] = c;
  }
  return out;
}

GzInputBuf::pos_type GzInputBuf::seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode which) {
  // Only "where am I" and "back to the start" are needed (a second pass over a file).
  if (off == 0 && dir == std::ios_base::cur) return seekable_ ? pos_type(off_type(handed_ - (egptr() - gptr()))) : pos_type(off_type(-1));
  if (off == 0 && dir == std::ios_base::beg) return seekpos(pos_type(0), which);
  return pos_type(off_type(-1));
}

GzInputBuf::pos_type GzInputBuf::seekpos(pos_type pos, std::ios_base::openmode) {
  if (pos != pos_type(0) || !seekable_ || !gz_ || !error_.empty()) return pos_type(off_type(-1));
  if (gzrewind(static_cast<gzFile>(gz_)) != 0) return pos_type(off_type(-1));
  total_ = handed_ = 0;
  in_string_ = escaped_ = false;
  space_run_ = 0;
  setg(buf_.data(), buf_.data(), buf_.data());
  return pos_type(0);
}

// ---------------------------------------------------------------- MemoryBuf

MemoryBuf::MemoryBuf(std::string_view text) {
  char* p = const_cast<char*>(text.data());  // read-only: no put area, no putback writes
  setg(p, p, p + text.size());
}

MemoryBuf::pos_type MemoryBuf::seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode) {
  off_type base = dir == std::ios_base::beg ? 0 : dir == std::ios_base::cur ? gptr() - eback() : egptr() - eback();
  const off_type to = base + off;
  if (to < 0 || to > egptr() - eback()) return pos_type(off_type(-1));
  setg(eback(), eback() + to, egptr());
  return pos_type(to);
}

MemoryBuf::pos_type MemoryBuf::seekpos(pos_type pos, std::ios_base::openmode which) {
  return seekoff(off_type(pos), std::ios_base::beg, which);
}

}  // namespace ls::tools::trace_check_detail
