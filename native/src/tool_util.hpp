// Small helpers shared by the native command-line tools (bench, hiccup, pipeline).
#pragma once

#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "jitterlab/sched.hpp"

namespace jitterlab::tool {

inline constexpr int kUsageError = 2;

/// Set by SIGINT/SIGTERM; tools poll it and stop at the next safe point.
inline volatile std::sig_atomic_t g_signal = 0;
extern "C" inline void on_signal(int sig) { g_signal = sig; }

/// Installs the stop handlers; a closed progress pipe must not kill a run before it
/// writes its samples, so SIGPIPE is ignored.
inline void install_signal_handlers() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGHUP, on_signal);  // a closed terminal or a supervisor: stop and keep what was recorded
    std::signal(SIGPIPE, SIG_IGN);
}

inline const char* signal_name() {
    return g_signal == SIGINT ? "SIGINT" : g_signal == SIGHUP ? "SIGHUP" : "SIGTERM";
}

[[noreturn]] inline void usage_error(const char* tool, const std::string& message) {
    std::fprintf(stderr, "%s: error: %s\n", tool, message.c_str());
    std::exit(kUsageError);
}

/// Parses an integer flag value in [lo, hi] or exits with a one-line usage error.
inline std::int64_t parse_int(const char* tool, const std::string& flag, const std::string& text, std::int64_t lo,
                              std::int64_t hi) {
    try {
        std::size_t used = 0;
        const long long v = std::stoll(text, &used);
        if (used != text.size() || v < lo || v > hi) throw std::out_of_range(text);
        return v;
    } catch (const std::logic_error&) {
        usage_error(tool, flag + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" +
                              text + "'");
    }
}

/// Parses a number flag value in (lo, hi] or exits with a one-line usage error.
inline double parse_real(const char* tool, const std::string& flag, const std::string& text, double lo, double hi) {
    try {
        std::size_t used = 0;
        const double v = std::stod(text, &used);
        if (used != text.size() || !(v > lo) || v > hi) throw std::out_of_range(text);
        return v;
    } catch (const std::logic_error&) {
        char range[64];
        std::snprintf(range, sizeof range, "(%g, %g]", lo, hi);
        usage_error(tool, flag + " expects a number in " + range + ", got '" + text + "'");
    }
}

/// The one argument reader of every native tool: walks argv, `next()` gives each flag,
/// `value()` its argument, `integer()` and `real()` a checked number. `--help` and `-h`
/// print `usage` and exit 0.
class ArgReader {
public:
    ArgReader(const char* tool, int argc, char** argv, const char* usage)
        : tool_(tool), argc_(argc), argv_(argv), usage_(usage) {}
    bool next() {
        if (++i_ >= argc_) return false;
        flag_ = argv_[i_];
        if (flag_ == "--help" || flag_ == "-h") {
            std::fputs(usage_, stdout);
            std::exit(0);
        }
        return true;
    }
    const std::string& flag() const { return flag_; }
    /// True when the flag is `name` or its old spelling `old`: an old spelling still works for
    /// this release, with the warning the Python CLI prints for its own (code deprecated-option).
    bool is(const char* name, const char* old) const {
        if (flag_ == name) return true;
        if (flag_ != old) return false;
        std::fprintf(stderr, "warning[deprecated-option]: %s is an old spelling: use %s\n", old, name);
        return true;
    }
    std::string value() {
        if (i_ + 1 >= argc_) usage_error(tool_, flag_ + " needs a value");
        return argv_[++i_];
    }
    std::int64_t integer(std::int64_t lo, std::int64_t hi) { return parse_int(tool_, flag_, value(), lo, hi); }
    double real(double lo, double hi) { return parse_real(tool_, flag_, value(), lo, hi); }
    [[noreturn]] void unknown() const { usage_error(tool_, "unknown option '" + flag_ + "' (see --help)"); }

private:
    const char* tool_;
    int argc_;
    char** argv_;
    const char* usage_;
    int i_ = 0;
    std::string flag_;
};

/// The flags every measuring tool shares, for the tools' --help.
constexpr const char* kCommonUsage =
    "  --out DIR                 folder for samples.jlraw and harness.json (must exist)\n"
    "  --policy other|fifo|rr    scheduling policy of the measuring threads (default other)\n"
    "  --priority 1..99          priority for fifo/rr\n"
    "  --no-mlock                do not lock memory (mlockall)\n";

/// The flags every measuring tool shares: --policy other|fifo|rr, --priority, --no-mlock,
/// --out. Returns false when `flag` is none of them; `value` reads the flag's argument.
template <typename ValueFn>
bool parse_common_flag(const char* tool, const std::string& flag, ValueFn&& value, PolicyRequest& policy, bool& mlock,
                       std::string& out_dir) {
    if (flag == "--policy") {
        const std::string v = value();
        if (!parse_policy(v, policy.policy) || policy.policy == Policy::deadline)
            usage_error(tool, "--policy expects other, fifo or rr");
    } else if (flag == "--priority") {
        policy.priority = static_cast<int>(parse_int(tool, flag, value(), 1, 99));
    } else if (flag == "--no-mlock") {
        mlock = false;
    } else if (flag == "--out") {
        out_dir = value();
    } else {
        return false;
    }
    return true;
}

/// A real-time policy needs a priority.
inline void check_policy(const char* tool, const PolicyRequest& policy) {
    if (policy.policy != Policy::other && policy.priority < 1)
        usage_error(tool, "--policy fifo/rr needs --priority between 1 and 99");
}

/// Writes `text` to `path` through a temporary file and a rename.
inline void write_file_atomically(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << text << '\n';
        if (!out) throw std::runtime_error("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp);
}

/// Exits with a usage error unless `dir` is writable.
inline void require_writable_dir(const char* tool, const std::string& dir) {
    if (::access(dir.c_str(), W_OK) != 0) usage_error(tool, "cannot write to --out " + dir);
}

}  // namespace jitterlab::tool
