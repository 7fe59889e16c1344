// tools/report/atomic_file.cpp — see atomic_file.hpp. POSIX (mkstemp, rename) and zlib.
#include "tools/report/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
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

  std::vector<char> tmpl(target.begin(), target.end());
  const std::string suffix = ".tmp.XXXXXX";
  tmpl.insert(tmpl.end(), suffix.begin(), suffix.end());
  tmpl.push_back('\0');
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) fail_write(path, os_reason(errno));
  const std::string tmp_path(tmpl.data());
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
