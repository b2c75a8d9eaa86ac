// Small helpers shared by the native command-line tools: the one option reader and usage
// printer (read_options), signal handling, atomic files.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

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

/// Walks argv for read_options (and for a tool's sub-command word): `next()` gives each flag,
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

/// One option of a tool: its spelling, the name of its argument (empty: a switch), its help
/// (a '\n' continues it on the next line, under the help column), what it does with the reader
/// positioned on it, and an old spelling that still works for this release (with the
/// warning the Python CLI prints for its own, code deprecated-option).
struct Option {
    std::string name;
    std::string arg;
    std::string help;
    std::function<void(ArgReader&)> apply;
    std::string old = {};
};
using OptionTable = std::vector<Option>;

/// An integer option in [lo, hi] stored into `target`.
template <typename T>
Option int_option(std::string name, std::string arg, std::string help, T& target, std::int64_t lo, std::int64_t hi) {
    return {std::move(name), std::move(arg), std::move(help),
            [&target, lo, hi](ArgReader& a) { target = static_cast<T>(a.integer(lo, hi)); }};
}

/// A number option in (lo, hi] stored into `target`.
inline Option real_option(std::string name, std::string arg, std::string help, double& target, double lo, double hi) {
    return {std::move(name), std::move(arg), std::move(help), [&target, lo, hi](ArgReader& a) { target = a.real(lo, hi); }};
}

/// An option whose text is stored into `target` as given.
inline Option text_option(std::string name, std::string arg, std::string help, std::string& target) {
    return {std::move(name), std::move(arg), std::move(help), [&target](ArgReader& a) { target = a.value(); }};
}

/// A switch (no argument) that sets `target` to `value`.
inline Option switch_option(std::string name, std::string help, bool& target, bool value = true) {
    return {std::move(name), "", std::move(help), [&target, value](ArgReader&) { target = value; }};
}

inline constexpr std::size_t kHelpColumn = 28;

/// The one usage printer: "usage: TOOL SYNOPSIS", the description, then one line per option
/// (its spelling and argument, its help from column 28).
inline std::string usage_text(const char* tool, const std::string& synopsis, const std::string& about,
                              const OptionTable& options) {
    std::string text = "usage: " + std::string(tool) + " " + synopsis + "\n";
    if (!about.empty()) text += about + "\n";
    for (const Option& o : options) {
        std::string left = "  " + o.name + (o.arg.empty() ? "" : " " + o.arg);
        left += left.size() < kHelpColumn ? std::string(kHelpColumn - left.size(), ' ') : "  ";
        for (std::size_t start = 0;;) {
            const std::size_t end = o.help.find('\n', start);
            text += left + o.help.substr(start, end - start) + "\n";
            if (end == std::string::npos) break;
            start = end + 1;
            left.assign(kHelpColumn, ' ');
        }
    }
    return text;
}

/// The one argument loop of every native tool: each flag of argv is looked up in `options`
/// then `more` (the shared ones, such as common_options) and applied; `--help` prints
/// usage_text and exits 0; an unknown flag, a missing value or a number out of range is one
/// line "TOOL: error: ..." and exit code 2.
inline void read_options(const char* tool, int argc, char** argv, const std::string& synopsis, const std::string& about,
                         OptionTable options, const OptionTable& more = {}) {
    options.insert(options.end(), more.begin(), more.end());
    const std::string usage = usage_text(tool, synopsis, about, options);
    ArgReader args(tool, argc, argv, usage.c_str());
    while (args.next()) {
        const std::string& flag = args.flag();
        const auto o = std::find_if(options.begin(), options.end(),
                                    [&](const Option& x) { return flag == x.name || (!x.old.empty() && flag == x.old); });
        if (o == options.end()) args.unknown();
        if (flag == o->old)
            std::fprintf(stderr, "warning[deprecated-option]: %s is an old spelling: use %s\n", o->old.c_str(), o->name.c_str());
        o->apply(args);
    }
}

/// The options every measuring tool shares: --out, --policy other|fifo|rr, --priority, --no-mlock.
inline OptionTable common_options(const char* tool, PolicyRequest& policy, bool& mlock, std::string& out_dir) {
    return {
        text_option("--out", "DIR", "folder for samples.jlraw and harness.json (must exist)", out_dir),
        {"--policy", "other|fifo|rr", "scheduling policy of the measuring threads (default other)",
         [tool, &policy](ArgReader& a) {
             if (!parse_policy(a.value(), policy.policy) || policy.policy == Policy::deadline)
                 usage_error(tool, "--policy expects other, fifo or rr");
         }},
        int_option("--priority", "1..99", "priority for fifo/rr", policy.priority, 1, 99),
        switch_option("--no-mlock", "do not lock memory (mlockall)", mlock, false),
    };
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
