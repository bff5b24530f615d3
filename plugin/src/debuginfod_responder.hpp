// SPDX-License-Identifier: MIT
// A debuginfod server inside LLDB's process, so that LLDB asks the plugin for
// a module's debug file at the moment it looks for the module's symbols.
//
// Why: LLDB keeps the unwind plans it made for a function, and it unwinds
// before any plugin code can run (a stop unwinds frame 0 and its caller on
// LLDB's private state thread before stop hooks run; loading a core unwinds at
// once), so the debug file must be in place when LLDB first loads the module.
// The public SB API has no hook there, but LLDB's symbol locators do: when
// the debug-file search paths hold no file for a module's build-id, LLDB asks
// each debuginfod server of plugin.symbol-locator.debuginfod.server-urls
// (GET <url>/buildid/<hex>/debuginfo), synchronously, on the thread that
// loads the module: `target create`, the dynamic loader's module list at
// launch, attach and dlopen, the modules of a core. Measured with LLDB 19 and
// 23 (both link libcurl, which LLDB's debuginfod client needs).
//
// The server answers on 127.0.0.1 only, under a random path prefix (other
// local users cannot guess the URL, which only LLDB's settings hold), one
// request per connection, one connection at a time, with timeouts on every
// read and write. It never calls into LLDB (the thread that asks holds LLDB's
// module lock), so it cannot deadlock against it.
#pragma once

#include "sfunwind/error.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace sfunwind::lldb_plugin {

class DebuginfodResponder {
  public:
    // The file to send for a build-id (lowercase hex), or empty for 404.
    using Lookup = std::function<std::string(const std::string& build_id)>;

    DebuginfodResponder() = default;
    DebuginfodResponder(const DebuginfodResponder&) = delete;
    DebuginfodResponder& operator=(const DebuginfodResponder&) = delete;
    ~DebuginfodResponder();

    // Binds 127.0.0.1 on a free port and starts the server thread. Errors
    // say which system call failed.
    Status start(Lookup lookup);
    void stop();
    bool running() const;
    // "http://127.0.0.1:PORT/TOKEN": the server URL to give LLDB.
    std::string url() const;
    std::uint64_t requests() const noexcept { return requests_; }
    std::uint64_t served() const noexcept { return served_; }

  private:
    void serve();
    void answer(int fd);

    mutable std::mutex mutex_;
    int listen_fd_ = -1;
    int wake_read_ = -1; // a pipe stop() writes to
    int wake_write_ = -1;
    std::string url_;
    std::string prefix_; // "/TOKEN/buildid/"
    Lookup lookup_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> requests_{0};
    std::atomic<std::uint64_t> served_{0};
};

} // namespace sfunwind::lldb_plugin
