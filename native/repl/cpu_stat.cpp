#include "cpu_stat.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace jitterlab::repl {

namespace {

std::int64_t to_ns(const timeval& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + static_cast<std::int64_t>(t.tv_usec) * 1'000;
}

bool parse_line(std::string_view line, long ticks_per_s, CpuStat& out) {
    if (line.size() < 4 || line.substr(0, 3) != "cpu" || line[3] < '0' || line[3] > '9') return false;
    const char* p = line.data() + 3;
    const char* end = line.data() + line.size();
    auto [q, ec] = std::from_chars(p, end, out.cpu);
    if (ec != std::errc{}) return false;
    p = q;
    for (auto& v : out.ns) {
        while (p < end && *p == ' ') ++p;
        std::int64_t ticks = 0;
        auto [r, e] = std::from_chars(p, end, ticks);
        if (e != std::errc{}) return false;
        p = r;
        v = ticks * (1'000'000'000 / ticks_per_s);
    }
    return true;
}

}  // namespace

std::vector<CpuStat> parse_proc_stat(std::string_view text, long ticks_per_s) {
    std::vector<CpuStat> cpus;
    if (ticks_per_s <= 0) return cpus;
    while (!text.empty()) {
        const auto eol = text.find('\n');
        const auto line = text.substr(0, eol);
        CpuStat s;
        if (parse_line(line, ticks_per_s, s)) cpus.push_back(s);
        if (eol == std::string_view::npos) break;
        text.remove_prefix(eol + 1);
    }
    return cpus;
}

std::vector<CpuStat> read_proc_stat() {
    std::ifstream in("/proc/stat");
    if (!in) return {};
    std::ostringstream text;
    text << in.rdbuf();
    return parse_proc_stat(text.str(), ::sysconf(_SC_CLK_TCK));
}

std::vector<CpuStat> difference(const std::vector<CpuStat>& before, const std::vector<CpuStat>& after) {
    std::vector<CpuStat> out;
    for (const auto& a : after) {
        for (const auto& b : before) {
            if (b.cpu != a.cpu) continue;
            CpuStat d{a.cpu, {}};
            for (std::size_t k = 0; k < d.ns.size(); ++k) d.ns[k] = a.ns[k] - b.ns[k];
            out.push_back(d);
            break;
        }
    }
    return out;
}

ThreadTimes thread_times() noexcept {
    rusage u{};
    if (::getrusage(RUSAGE_THREAD, &u) != 0) return {};
    return {to_ns(u.ru_utime), to_ns(u.ru_stime)};
}

}  // namespace jitterlab::repl
