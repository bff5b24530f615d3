// SPDX-License-Identifier: MIT
#include "debuginfod_responder.hpp"

#include <arpa/inet.h>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <random>
#include <string_view>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

namespace sfunwind::lldb_plugin {
namespace {

// LLDB's request is a request line and a few headers; anything longer is
// not from LLDB.
constexpr std::size_t max_request = 8192;
// Long enough for a slow disk, short enough that a client that stops
// reading or writing cannot keep the server from the next request for long.
constexpr int io_timeout_seconds = 10;

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

std::string errno_text(const char* call) {
    return std::string(call) + ": " + std::strerror(errno);
}

bool send_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        // MSG_NOSIGNAL: a client that went away must not raise SIGPIPE in LLDB.
        const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

void send_status(int fd, std::string_view status) {
    std::string r = "HTTP/1.1 ";
    r += status;
    r += "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    if (!send_all(fd, r.data(), r.size())) return;
    // Closing with unread input would reset the connection and could drop
    // the answer before the client reads it: say we are done, then read
    // what the client still sends, for a short while.
    ::shutdown(fd, SHUT_WR);
    std::array<char, 4096> sink{};
    for (int i = 0; i < 64; ++i) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) break;
        if (::recv(fd, sink.data(), sink.size(), 0) <= 0) break;
    }
}

// The request line's target ("/TOKEN/buildid/ID/debuginfo"), or empty when
// the request is not a complete GET.
std::string get_target(const std::string& request) {
    const std::size_t eol = request.find("\r\n");
    if (eol == std::string::npos || request.compare(0, 4, "GET ") != 0) return {};
    const std::size_t end = request.find(' ', 4);
    if (end == std::string::npos || end > eol) return {};
    std::string target = request.substr(4, end - 4);
    // Clients join the server URL and the path with or without a slash.
    std::string out;
    for (const char c : target)
        if (c != '/' || out.empty() || out.back() != '/') out += c;
    return out;
}

// "ID/debuginfo" after the prefix: the build-id, lowercase, or empty.
std::string build_id_of(std::string_view rest) {
    constexpr std::string_view suffix = "/debuginfo";
    if (rest.size() <= suffix.size() || rest.substr(rest.size() - suffix.size()) != suffix)
        return {};
    rest.remove_suffix(suffix.size());
    // GNU build-ids are 8 to 64 bytes in practice (ld --build-id=sha1 is 20).
    if (rest.size() < 2 || rest.size() > 128 || rest.size() % 2 != 0) return {};
    std::string id;
    for (const char c : rest) {
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))
            id += c;
        else if (c >= 'A' && c <= 'F')
            id += static_cast<char>(c - 'A' + 'a');
        else
            return {};
    }
    return id;
}

} // namespace

DebuginfodResponder::~DebuginfodResponder() {
    stop();
}

Status DebuginfodResponder::start(Lookup lookup) {
    const std::lock_guard lock(mutex_);
    if (listen_fd_ >= 0) return ok();
    Fd s;
    s.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s.fd < 0) return Error(Errc::Io, "debuginfod responder: " + errno_text("socket"));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = 0;                         // any free port
    addr.sin_addr.s_addr = htonl(0x7f000001U); // 127.0.0.1: never reachable from another host
    if (::bind(s.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
        return Error(Errc::Io, "debuginfod responder: " + errno_text("bind 127.0.0.1"));
    if (::listen(s.fd, 16) != 0)
        return Error(Errc::Io, "debuginfod responder: " + errno_text("listen"));
    socklen_t len = sizeof addr;
    if (::getsockname(s.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
        return Error(Errc::Io, "debuginfod responder: " + errno_text("getsockname"));
    std::random_device entropy;
    std::string token;
    for (int i = 0; i < 4; ++i) {
        char buf[12];
        std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(entropy()));
        token += buf;
    }
    url_ = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/" + token;
    prefix_ = "/" + token + "/buildid/";
    lookup_ = std::move(lookup);
    int wake[2];
    if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0)
        return Error(Errc::Io, "debuginfod responder: " + errno_text("pipe"));
    wake_read_ = wake[0];
    wake_write_ = wake[1];
    listen_fd_ = std::exchange(s.fd, -1);
    stop_ = false;
    thread_ = std::thread([this] { serve(); });
    return ok();
}

void DebuginfodResponder::stop() {
    std::thread t;
    {
        const std::lock_guard lock(mutex_);
        stop_ = true;
        t = std::move(thread_);
        // Wakes the server from poll() at once.
        if (wake_write_ >= 0) {
            // Nothing to do when it fails: the pipe is non-blocking, and a
            // full one wakes the server as well.
            [[maybe_unused]] const ssize_t n = ::write(wake_write_, "x", 1);
        }
    }
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
    const std::lock_guard lock(mutex_);
    for (int* fd : {&listen_fd_, &wake_read_, &wake_write_}) {
        if (*fd >= 0) ::close(*fd);
        *fd = -1;
    }
    url_.clear();
}

bool DebuginfodResponder::running() const {
    const std::lock_guard lock(mutex_);
    return listen_fd_ >= 0;
}

std::string DebuginfodResponder::url() const {
    const std::lock_guard lock(mutex_);
    return url_;
}

void DebuginfodResponder::serve() {
    int listen_fd = -1;
    int wake_fd = -1;
    {
        const std::lock_guard lock(mutex_);
        listen_fd = listen_fd_;
        wake_fd = wake_read_;
    }
    while (!stop_) {
        // stop() writes to the wake pipe; the sockets stay open until the
        // thread has ended.
        std::array<pollfd, 2> p{{{listen_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}}};
        const int ready = ::poll(p.data(), p.size(), -1);
        if (ready <= 0 || (p[0].revents & POLLIN) == 0) continue;
        Fd conn;
        conn.fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (conn.fd < 0) continue;
        const timeval tv{io_timeout_seconds, 0};
        ::setsockopt(conn.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(conn.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        try {
            answer(conn.fd);
        } catch (...) {
            // Nothing may leave this thread: it would end LLDB (std::terminate).
            send_status(conn.fd, "500 Internal Server Error");
        }
    }
}

void DebuginfodResponder::answer(int fd) {
    std::string request;
    std::array<char, 2048> buf{};
    while (request.find("\r\n\r\n") == std::string::npos) {
        if (request.size() >= max_request)
            return send_status(fd, "431 Request Header Fields Too Large");
        const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return; // closed, or timed out
        request.append(buf.data(), static_cast<std::size_t>(n));
    }
    const std::string target = get_target(request);
    if (target.empty()) return send_status(fd, "400 Bad Request");
    // Any other path (another user guessing, or debuginfod's /executable and
    // /source requests, which the plugin has nothing for) gets 404.
    if (target.compare(0, prefix_.size(), prefix_) != 0) return send_status(fd, "404 Not Found");
    const std::string id = build_id_of(std::string_view(target).substr(prefix_.size()));
    if (id.empty()) return send_status(fd, "404 Not Found");
    ++requests_;
    const std::string path = lookup_(id);
    if (path.empty()) return send_status(fd, "404 Not Found");
    Fd file;
    file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (file.fd < 0 || ::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode))
        return send_status(fd, "404 Not Found");
    const std::string header =
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
        std::to_string(st.st_size) + "\r\nConnection: close\r\n\r\n";
    if (!send_all(fd, header.data(), header.size())) return;
    std::array<char, 65536> chunk{};
    auto left = static_cast<std::uint64_t>(st.st_size);
    while (left > 0) {
        const ssize_t n = ::read(file.fd, chunk.data(), chunk.size());
        if (n < 0 && errno == EINTR) continue;
        // A file cut short while being sent: the client sees fewer bytes
        // than Content-Length and discards the download.
        if (n <= 0) return;
        if (!send_all(fd, chunk.data(), static_cast<std::size_t>(n))) return;
        left -= std::min<std::uint64_t>(left, static_cast<std::uint64_t>(n));
    }
    ++served_;
}

} // namespace sfunwind::lldb_plugin
