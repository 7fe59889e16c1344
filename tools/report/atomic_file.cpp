// tools/report/atomic_file.cpp — see atomic_file.hpp. POSIX (mkstemp, rename) and zlib.
#include "tools/report/atomic_file.hpp"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace ls::tools {
namespace {

std::string os_reason(int err) { return std::strerror(err); }

bool ends_with_gz(const std::string& path) { return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0; }

// Writes all of `text` to `fd`; returns 0 or the errno of the failure.
int write_all(int fd, std::string_view text) {
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    off += static_cast<std::size_t>(n);
  }
  return 0;
}

// Compresses `text` into `fd` (which it closes); returns "" or the reason of the failure.
std::string write_gzip(int fd, std::string_view text) {
  gzFile gz = gzdopen(fd, "wb");
  if (!gz) {
    ::close(fd);
    return "cannot start gzip compression";
  }
  std::size_t off = 0;
  while (off < text.size()) {
    // gzwrite takes an unsigned length: bounded chunks for multi-GB traces.
    const unsigned n = static_cast<unsigned>(std::min<std::size_t>(text.size() - off, 1u << 30));
    errno = 0;
    if (gzwrite(gz, text.data() + off, n) != static_cast<int>(n)) {
      int zerr = 0;
      const char* msg = gzerror(gz, &zerr);
      const std::string reason = zerr == Z_ERRNO ? os_reason(errno) : std::string(msg ? msg : "gzip error");
      gzclose(gz);
      return reason;
    }
    off += n;
  }
  errno = 0;
  const int rc = gzclose(gz);
  if (rc != Z_OK) return rc == Z_ERRNO ? os_reason(errno) : std::string("gzip error on close");
  return {};
}

[[noreturn]] void fail_write(const std::string& path, const std::string& reason) {
  throw IoError(fmt::format("cannot write '{}': {}", path, reason));
}

// Temp files being written, for the signal handler below. A signal is process-wide, so
// this one table is too: fixed slots of fixed-size names, because a handler may only
// touch lock-free atomics and call async-signal-safe functions (unlink, sigaction, raise).
constexpr int kTempSlots = 16;
// kRemoving: the handler holds the slot (it claims a live one before reading its name,
// so no writer can free and reuse it under it; the process ends right after).
enum SlotState : int { kFree = 0, kNaming = 1, kLive = 2, kRemoving = 3 };
struct TempSlot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX] = {};
};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler reads the slots' state");
TempSlot g_temp_slots[kTempSlots];
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGXFSZ};

extern "C" void remove_temps_and_reraise(int sig) {
  for (auto& slot : g_temp_slots) {
    int live = kLive;
    if (slot.state.compare_exchange_strong(live, kRemoving, std::memory_order_acq_rel)) ::unlink(slot.path);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);  // what the signal would have done: the exit status says which
}

/// Installs the handler for each signal still at its default action (a program that
/// embeds the library — Python's SIGINT, say — keeps its own).
void install_cleanup_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const int sig : kCleanupSignals) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = remove_temps_and_reraise;
      ::sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

/// Holds a temp file's name in the table while it exists. With every slot taken (more
/// concurrent writes than slots) that file is removed on errors only, not on signals.
class TempRegistration {
public:
  explicit TempRegistration(const std::string& path) {
    if (path.size() >= PATH_MAX) return;
    install_cleanup_handlers();
    for (auto& slot : g_temp_slots) {
      int expected = kFree;
      if (!slot.state.compare_exchange_strong(expected, kNaming, std::memory_order_acq_rel)) continue;
      std::memcpy(slot.path, path.c_str(), path.size() + 1);
      slot.state.store(kLive, std::memory_order_release);  // the handler reads only a live slot's name
      slot_ = &slot;
      return;
    }
  }
  ~TempRegistration() {
    int live = kLive;  // a slot the handler holds stays its own
    if (slot_) slot_->state.compare_exchange_strong(live, kFree, std::memory_order_acq_rel);
  }
  TempRegistration(const TempRegistration&) = delete;
  TempRegistration& operator=(const TempRegistration&) = delete;

private:
  TempSlot* slot_ = nullptr;
};

}  // namespace

void flush_stdout() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    std::clearerr(stdout);
    throw IoError(fmt::format("cannot write to stdout: {}", err ? os_reason(err) : "write error"));
  }
}

void write_output(const std::string& path, std::string_view text) {
  if (path.empty()) throw std::invalid_argument("write_output: empty path (the command line must reject it)");
  if (path == "-") {
    if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
      const int err = errno;
      throw IoError(fmt::format("cannot write to stdout: {}", err ? os_reason(err) : "write error"));
    }
    flush_stdout();
    return;
  }

  // A symbolic link is followed: the file it points to is replaced, not the link.
  std::string target = path;
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      target = real;
      std::free(real);
    }
  }
  // A device, FIFO or other special target (/dev/null, /dev/stdout, a pipe) cannot be
  // replaced by rename: write to it directly.
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) fail_write(path, os_reason(EISDIR));
  if (exists && !S_ISREG(st.st_mode)) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail_write(path, os_reason(errno));
    if (ends_with_gz(path)) {
      const std::string reason = write_gzip(fd, text);
      if (!reason.empty()) fail_write(path, reason);
      return;
    }
    const int err = write_all(fd, text);
    const int cerr = ::close(fd) == 0 ? 0 : errno;
    if (err || cerr) fail_write(path, os_reason(err ? err : cerr));
    return;
  }

  // The temp file sits beside the target (rename stays within one file system) under
  // a short name of its own, so a target whose name is at the file system's limit
  // still has one; a signal removes it (TempRegistration), as does any error.
  const auto slash = target.find_last_of('/');
  const std::string dir = slash == std::string::npos ? std::string() : target.substr(0, slash + 1);
  std::string tmpl_text = dir + ".layoutsim.XXXXXX";
  std::vector<char> tmpl(tmpl_text.begin(), tmpl_text.end());
  tmpl.push_back('\0');
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) fail_write(path, os_reason(errno));
  const std::string tmp_path(tmpl.data());
  const TempRegistration registration(tmp_path);
  auto discard = [&](const std::string& reason) {
    ::unlink(tmp_path.c_str());
    fail_write(path, reason);
  };

  // mkstemp creates mode 0600: give the file the mode a plain create would (or the
  // mode of the file it replaces).
  mode_t mode = 0;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  if (::fchmod(fd, mode) != 0) {
    const int err = errno;
    ::close(fd);
    discard(os_reason(err));
  }

  if (ends_with_gz(path)) {
    const int keep = ::dup(fd);  // write_gzip closes its descriptor; fsync needs one
    const std::string reason = write_gzip(fd, text);
    if (!reason.empty()) {
      if (keep >= 0) ::close(keep);
      discard(reason);
    }
    if (keep >= 0) {
      const int err = ::fsync(keep) == 0 ? 0 : errno;
      ::close(keep);
      if (err && err != EINVAL && err != EROFS) discard(os_reason(err));
    }
  } else {
    int err = write_all(fd, text);
    if (!err && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) err = errno;
    if (::close(fd) != 0 && !err) err = errno;
    if (err) discard(os_reason(err));
  }
  if (::rename(tmp_path.c_str(), target.c_str()) != 0) discard(os_reason(errno));
}

std::string read_input(const std::string& path, std::size_t max_bytes) {
  if (path.empty()) throw std::invalid_argument("read_input: empty path (the command line must reject it)");
  const bool is_stdin = path == "-";
  const std::string name = is_stdin ? std::string("stdin") : "'" + path + "'";
  const int fd = is_stdin ? ::dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(fmt::format("cannot read {}: {}", name, os_reason(errno)));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw IoError(fmt::format("cannot read {}: {}", name, os_reason(EISDIR)));
  }
  gzFile gz = gzdopen(fd, "rb");  // passes plain files through
  if (!gz) {
    ::close(fd);
    throw IoError(fmt::format("cannot read {}: cannot start gzip decompression", name));
  }
  std::string out;
  std::vector<char> buf(1 << 16);
  for (;;) {
    errno = 0;
    const int n = gzread(gz, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int zerr = 0;
      const char* msg = gzerror(gz, &zerr);
      const std::string reason = zerr == Z_ERRNO ? os_reason(errno) : fmt::format("corrupt gzip data ({})", msg ? msg : "?");
      gzclose(gz);
      throw IoError(fmt::format("cannot read {}: {}", name, reason));
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      gzclose(gz);
      throw IoError(fmt::format("cannot read {}: larger than the limit of {} bytes{}", name, max_bytes,
                                ends_with_gz(path) ? " once decompressed" : ""));
    }
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  gzclose(gz);
  return out;
}

}  // namespace ls::tools
