// jitterlab-net: the node agent of `jitterlab net` (docs/net.md). One program on every node,
// started by `ip netns exec` or by `ssh`, driven by one line protocol on stdin/stdout, so the
// coordinator runs the same benchmark on namespaces and on real hosts:
//
//   agent says: hello jitterlab-net VERSION PROTOCOL TRANSPORTS
//   serve transport=T bind=A port=P payload=B node=I   -> serving PORT
//   run scenario=S transport=T peers=A:P[,A:P] payload=B node=I duration_ns=D warmup_ns=W
//       rate=R messages=N steps=S fps=F sync=0|1 states=K timeout_ns=T step_pause=0|1
//                                                     -> ready; then "go" -> progress... result ... samples N + bytes
//                                                        (ping, frame-sync, open-loop: "part N" + bytes about
//                                                        every second in between: the records since the last
//                                                        part, so a coordinator killed mid-run leaves them in
//                                                        staging; open loop: those settled, answered or timed out)
//                                                        (stream with step_pause=1: "stepped K" after each
//                                                        step but the last, then waits for "next")
//   part                                              -> part N + bytes (what a server recorded since the last
//                                                        part, handed over and no longer kept: the coordinator
//                                                        asks about every second)
//   collect                                           -> result ... samples N + bytes (what a server recorded
//                                                        since the last part: the parts and this are the whole)
//   quit (or end of input: the coordinator is gone)   -> exit 0
// Errors the user can fix: "error MESSAGE". Every "samples N"/"part N" is followed by a whole
// raw sample file of the run format (docs/run-format.md) holding N net records (header with
// the record size, records, footer with count and CRC-32): the records the run stores.
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../src/tool_util.hpp"
#include "jitterlab/clock.hpp"
#include "jitterlab/cpu_wake.hpp"
#include "transport.hpp"

namespace jl = jitterlab;
namespace net = jitterlab::net;

namespace {

constexpr const char* kTool = "jitterlab-net";
constexpr std::int64_t kLateNs = 1'000'000;  // a send this much behind its schedule counts as late

using Params = std::map<std::string, std::string>;

Params parse_params(std::istringstream& in) {
    Params p;
    std::string word;
    while (in >> word) {
        const auto eq = word.find('=');
        if (eq != std::string::npos) p[word.substr(0, eq)] = word.substr(eq + 1);
    }
    return p;
}

std::int64_t number(const Params& p, const std::string& key, std::int64_t fallback) {
    const auto it = p.find(key);
    if (it == p.end()) return fallback;
    try {
        return std::stoll(it->second);
    } catch (const std::logic_error&) {
        throw net::SetupError(key + " expects an integer, got '" + it->second + "'");
    }
}

double real(const Params& p, const std::string& key, double fallback) {
    const auto it = p.find(key);
    if (it == p.end()) return fallback;
    try {
        return std::stod(it->second);
    } catch (const std::logic_error&) {
        throw net::SetupError(key + " expects a number, got '" + it->second + "'");
    }
}

std::string text(const Params& p, const std::string& key) {
    const auto it = p.find(key);
    if (it == p.end()) throw net::SetupError("missing " + key + "=");
    return it->second;
}

void say(const std::string& line) {
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
}

/// "WORD N" and a raw sample file of the N records (the one record shape of the run format).
void write_block(const char* word, const net::NetSampleRecord* records, std::size_t count) {
    say(std::string(word) + " " + std::to_string(count));
    const auto header = jl::raw_header(sizeof(net::NetSampleRecord));
    const std::size_t bytes = count * sizeof(net::NetSampleRecord);
    const auto footer = jl::raw_footer(count, jl::crc32_update(0, records, bytes), false);
    std::fwrite(header.data(), 1, header.size(), stdout);
    std::fwrite(records, 1, bytes, stdout);
    std::fwrite(footer.data(), 1, footer.size(), stdout);
    std::fflush(stdout);
}

void send_records(const std::vector<net::NetSampleRecord>& records) { write_block("samples", records.data(), records.size()); }

constexpr std::int64_t kPartNs = 1'000'000'000;  // issue 24 item 10: at most ~1 s of samples only in the agent

/// What every scenario reports beside its samples.
struct Outcome {
    std::vector<net::NetSampleRecord> records;
    std::int64_t sent = 0, answered = 0, lost = 0, late = 0, send_failures = 0, max_lag = 0, credit_timeouts = 0;
    std::int64_t measured_lost = 0;  // ping, open-loop: lost among those sent after the warm-up
    std::int64_t frames = 0, frames_complete = 0;
    std::vector<std::string> steps;  // stream: "count:receiver_ns:sender_ns" per step
    bool interrupted = false;
};

class Scenario {
public:
    Scenario(const Params& p, net::Client& client, int peers)
        : p_(p), client_(client), peers_(peers), payload_(static_cast<int>(number(p, "payload", 64))),
          node_(static_cast<std::uint32_t>(number(p, "node", 0))), timeout_(number(p, "timeout_ns", 1'000'000'000)),
          out_(static_cast<std::size_t>(payload_)), in_(net::kMaxPayload) {}

    Outcome run(std::int64_t t0) {
        t0_ = t0;
        warm_end_ = t0 + number(p_, "warmup_ns", 0);
        end_ = warm_end_ + number(p_, "duration_ns", 10'000'000'000);
        const std::string s = text(p_, "scenario");
        parts_ = s == "ping" || s == "frame-sync" ? Parts::appended : s == "open-loop" ? Parts::settled : Parts::none;
        step_pause_ = number(p_, "step_pause", 0) != 0;
        next_part_ = warm_end_ + kPartNs;
        if (s == "ping") ping();
        else if (s == "open-loop") open_loop(real(p_, "rate", 1000));
        else if (s == "stream") stream(number(p_, "messages", 100'000), number(p_, "steps", 5));
        else if (s == "frame-sync") frame_sync(real(p_, "fps", 60), number(p_, "sync", 1) != 0, number(p_, "states", 12));
        else throw net::SetupError("unknown scenario '" + s + "'");
        return std::move(o_);
    }

private:
    std::int32_t node() const { return static_cast<std::int32_t>(node_); }

    bool stopping() {
        const std::int64_t now = jl::now_ns();
        if (now >= next_progress_) {
            next_progress_ = now + 200'000'000;
            say("progress " + std::to_string(std::clamp<std::int64_t>(now - t0_, 0, end_ - t0_)) + " " + std::to_string(end_ - t0_));
        }
        // ping and frame-sync append final records in order: hand the new ones over as a part
        // (between two messages, never inside a measured round trip). Open loop hands over its
        // requests once settled; stream's records are the receiver's (the coordinator asks it).
        if (now >= next_part_ && parts_ == Parts::appended && o_.records.size() > parted_) {
            next_part_ = now + kPartNs;
            write_block("part", o_.records.data() + parted_, o_.records.size() - parted_);
            parted_ = o_.records.size();
        } else if (now >= next_part_ && parts_ == Parts::settled) {
            next_part_ = now + kPartNs;
            hand_over_settled(now);
        }
        if (jl::tool::g_signal != 0) o_.interrupted = true;
        return o_.interrupted;
    }

    bool send(int peer, net::Kind kind, std::int64_t seq, std::int64_t intended) {
        const std::int64_t t = jl::now_ns();
        net::write_header(out_.data(), {kind, node_, seq, intended, t});
        const bool ok = client_.send(peer, out_.data(), payload_);
        if (!ok) ++o_.send_failures;
        last_send_ = t;
        return ok;
    }

    /// One message before the deadline (its receive time in `t`), or nullopt.
    bool receive(std::int64_t deadline, net::Header& h, std::int64_t& t) {
        const int n = client_.recv(in_.data(), static_cast<int>(in_.size()), deadline);
        t = jl::now_ns();
        if (n < net::kHeaderBytes) return false;
        h = net::read_header(in_.data());
        return true;
    }

    void ping() {
        for (std::int64_t seq = 0; jl::now_ns() < end_ && !stopping(); ++seq) {
            send(0, net::Kind::ping, seq, 0);
            const std::int64_t sent = last_send_;
            ++o_.sent;
            net::Header h{};
            std::int64_t t = 0;
            bool answered = false;
            while (receive(sent + timeout_, h, t))
                if (h.kind == net::Kind::pong && h.seq == seq) {
                    answered = true;
                    break;
                }  // else a late answer to an earlier ping: already counted lost
            if (!answered) {
                ++o_.lost;
                if (sent >= warm_end_) ++o_.measured_lost;
                continue;
            }
            ++o_.answered;
            if (sent >= warm_end_) o_.records.push_back(net::sample(0, node(), static_cast<std::int32_t>(h.node), seq, sent, sent, t));
        }
    }

    /// Open loop, about every second: the requests from the oldest not yet handed over up to
    /// the first one still waiting for its answer within the timeout; those answered after
    /// the warm-up go over as a part (in order of sending). A part is what recover keeps: the
    /// final result may still count an answer later than the timeout as answered.
    void hand_over_settled(std::int64_t now) {
        std::vector<net::NetSampleRecord> settled;
        for (; pending_parted_ < pending_.size(); ++pending_parted_) {
            const net::NetSampleRecord& r = pending_[pending_parted_];
            if (r.t_recv_ns == 0 && r.t_intended_ns + timeout_ > now) break;  // may still be answered
            if (r.t_recv_ns != 0 && r.t_intended_ns >= warm_end_) settled.push_back(r);
        }
        if (!settled.empty()) write_block("part", settled.data(), settled.size());
    }

    void open_loop(double rate) {
        const auto period = static_cast<std::int64_t>(1e9 / rate);
        std::vector<net::NetSampleRecord>& pending = pending_;
        pending.reserve(static_cast<std::size_t>((end_ - t0_) / period + 1));
        net::Header h{};
        std::int64_t t = 0;
        auto take = [&] {
            if (h.kind != net::Kind::pong || h.seq < 0 || h.seq >= static_cast<std::int64_t>(pending.size())) return;
            auto& r = pending[static_cast<std::size_t>(h.seq)];
            if (r.t_recv_ns == 0) {
                r.t_recv_ns = t;
                r.dst_node = static_cast<std::int32_t>(h.node);
                ++o_.answered;
            }
        };
        for (std::int64_t seq = 0;; ++seq) {
            const std::int64_t due = t0_ + seq * period;
            if (due >= end_ || stopping()) break;
            while (jl::now_ns() < due)
                if (receive(due, h, t)) take();
            send(0, net::Kind::ping, seq, due);
            pending.push_back(net::sample(0, node(), 0, seq, due, last_send_, 0, true));  // answered: t_recv_ns, dst_node
            ++o_.sent;
            const std::int64_t lag = last_send_ - due;
            o_.max_lag = std::max(o_.max_lag, lag);
            if (lag > kLateNs) ++o_.late;
        }
        const std::int64_t grace = jl::now_ns() + timeout_;
        while (o_.answered < o_.sent && jl::now_ns() < grace && jl::tool::g_signal == 0)
            if (receive(grace, h, t)) take();
        o_.lost = o_.sent - o_.answered;
        for (const auto& r : pending)
            if (r.t_intended_ns >= warm_end_) {
                if (r.t_recv_ns != 0) o_.records.push_back(r);
                else ++o_.measured_lost;
            }
    }

    /// Waits until `deadline` for a reply of `kind` to step `step` (credit: t_intended = step;
    /// ready: t_send = step); answers to earlier steps (a repeated start or end) are skipped.
    bool await_reply(net::Kind kind, std::int64_t step, std::int64_t deadline, net::Header& h, std::int64_t& t) {
        while (receive(deadline, h, t))
            if (h.kind == kind && (kind == net::Kind::credit ? h.t_intended : h.t_send) == step) return true;
        return false;
    }

    /// Sends `kind` until step `step`'s reply comes (a lost datagram is sent again every 100 ms).
    bool handshake(net::Kind kind, std::int64_t seq, std::int64_t intended, net::Kind reply, std::int64_t step,
                   std::int64_t give_up, net::Header& h, std::int64_t& t) {
        while (jl::now_ns() < give_up && jl::tool::g_signal == 0) {
            send(0, kind, seq, intended);
            if (await_reply(reply, step, std::min(give_up, jl::now_ns() + 100'000'000), h, t)) return true;
        }
        return false;
    }

    /// Per step: start (until the receiver confirms it), N messages, end (until ready). The
    /// receiver grants credit every `every` messages and the sender keeps at most 4 x `every`
    /// beyond it (wire.hpp): a udp receiver that waits for a CPU would otherwise overflow its
    /// socket buffer, and the kernel drops silently. What still goes missing is counted lost.
    void stream(std::int64_t messages, std::int64_t steps) {
        const std::int64_t every = net::credit_interval(payload_), window = 4 * every;
        const std::int64_t give_up_after = std::max<std::int64_t>(timeout_, 30'000'000'000);
        net::Header h{};
        std::int64_t t = 0;
        for (std::int64_t step = 0; step < steps && !stopping(); ++step) {
            if (step > 0 && step_pause_ && !paused_between_steps(step - 1)) break;
            const std::int64_t t_start = jl::now_ns(), first = step * messages;
            if (!handshake(net::Kind::start, step, every, net::Kind::credit, step, t_start + give_up_after, h, t)) {
                o_.lost += messages;
                o_.sent += messages;  // counted as sent: the step was due, none of it arrived
                o_.steps.push_back("0:0:" + std::to_string(jl::now_ns() - t_start));
                continue;
            }
            std::int64_t credited = first - 1;
            for (std::int64_t k = 0; k < messages; ++k) {
                const std::int64_t seq = first + k;
                if (seq - credited > window) {  // wait for credit; none within the timeout: go on
                    const std::int64_t deadline = jl::now_ns() + timeout_;
                    while (seq - credited > window && await_reply(net::Kind::credit, step, deadline, h, t))
                        credited = std::max(credited, h.seq);
                    if (seq - credited > window) {
                        ++o_.credit_timeouts;
                        credited = seq - window;
                        // a receiver gone for good costs a timeout per message: stop when told to
                        // (a coordinator killed outright sends SIGTERM through PR_SET_PDEATHSIG)
                        if (stopping()) break;
                    }
                }
                send(0, net::Kind::data, seq, 0);
                if ((k & 0x3fff) == 0 && stopping()) break;
            }
            o_.sent += messages;
            if (!handshake(net::Kind::end, messages, step, net::Kind::ready, step, jl::now_ns() + give_up_after, h, t)) {
                o_.lost += messages;
                o_.steps.push_back("0:0:" + std::to_string(jl::now_ns() - t_start));
                continue;
            }
            o_.answered += h.seq;
            o_.lost += messages - h.seq;
            o_.steps.push_back(std::to_string(h.seq) + ":" + std::to_string(h.t_intended) + ":" + std::to_string(t - t_start));
        }
        end_ = jl::now_ns();
    }

    /// Stream with step_pause=1: after each step, "stepped K", then wait for the coordinator's
    /// "next": it collects the receivers' records while nothing is measured (a part between
    /// steps costs the measurement nothing). False when the coordinator is gone.
    bool paused_between_steps(std::int64_t step) {
        say("stepped " + std::to_string(step));
        std::string line;
        if (std::getline(std::cin, line) && line == "next") return true;
        o_.interrupted = true;
        return false;
    }

    /// The seed's distributed rendering: each frame, `states` state updates and the frame token
    /// to every render node; synchronised, the next frame waits for every node's done.
    void frame_sync(double fps, bool sync, std::int64_t states) {
        const auto period = static_cast<std::int64_t>(1e9 / fps);
        std::vector<std::int64_t> intended, sent_at, done_count;
        net::Header h{};
        std::int64_t t = 0;
        auto take = [&] {
            if (h.kind != net::Kind::done || h.seq < 0 || h.seq >= static_cast<std::int64_t>(done_count.size())) return;
            const auto f = static_cast<std::size_t>(h.seq);
            if (++done_count[f] == peers_) ++o_.frames_complete;
            if (sent_at[f] >= warm_end_)
                o_.records.push_back(net::sample(static_cast<std::int32_t>(h.node), node(), static_cast<std::int32_t>(h.node), h.seq,
                                                 intended[f], sent_at[f], h.t_intended));
        };
        std::int64_t due = t0_;
        for (std::int64_t f = 0; due < end_ && !stopping(); ++f) {
            if (sync && f > 0) {  // every node has shown the last frame before the next one starts
                const std::int64_t give_up = jl::now_ns() + timeout_;
                while (done_count.back() < peers_ && jl::now_ns() < give_up && !stopping())
                    if (receive(give_up, h, t)) take();
            }
            while (jl::now_ns() < due)
                if (receive(due, h, t)) take();
            intended.push_back(due);
            sent_at.push_back(jl::now_ns());
            done_count.push_back(0);
            for (int peer = 0; peer < peers_; ++peer) {
                for (std::int64_t k = 0; k < states; ++k) send(peer, net::Kind::state, f, due);
                send(peer, net::Kind::frame, f, due);
            }
            ++o_.frames;
            o_.sent += peers_;
            const std::int64_t lag = sent_at.back() - due;
            if (!sync && lag > kLateNs) ++o_.late;
            o_.max_lag = std::max(o_.max_lag, lag);
            due += period;
            if (jl::now_ns() > due) due = jl::now_ns();  // late: no burst to catch up
        }
        const std::int64_t grace = jl::now_ns() + timeout_;
        while (o_.frames_complete < o_.frames && jl::now_ns() < grace && jl::tool::g_signal == 0)
            if (receive(grace, h, t)) take();
        std::int64_t answered = 0;
        for (auto c : done_count) answered += c;
        o_.answered = answered;
        o_.lost = o_.sent - answered;
    }

    const Params& p_;
    net::Client& client_;
    int peers_, payload_;
    std::uint32_t node_;
    std::int64_t timeout_, t0_ = 0, warm_end_ = 0, end_ = 0, last_send_ = 0, next_progress_ = 0, next_part_ = 0;
    // how records go over in parts: appended (ping, frame-sync: final once recorded), settled
    // (open loop: final once answered or timed out), none (stream: the receiver records)
    enum class Parts { none, appended, settled } parts_ = Parts::none;
    bool step_pause_ = false;         // stream: wait for "next" between steps
    std::size_t parted_ = 0;          // records already handed over in parts
    std::vector<net::NetSampleRecord> pending_;  // open loop: every request sent, by sequence number
    std::size_t pending_parted_ = 0;  // open loop: requests already settled and handed over
    std::vector<char> out_, in_;
    Outcome o_;
};

void report(const Outcome& o, std::int64_t window_ns, const std::string& pm_qos) {
    std::string steps;
    for (const auto& s : o.steps) steps += (steps.empty() ? "" : ",") + s;
    say("result sent=" + std::to_string(o.sent) + " answered=" + std::to_string(o.answered) + " lost=" + std::to_string(o.lost) +
        " measured_lost=" + std::to_string(o.measured_lost) + " late=" + std::to_string(o.late) + " max_lag_ns=" + std::to_string(o.max_lag) + " send_failures=" +
        std::to_string(o.send_failures) + " credit_timeouts=" + std::to_string(o.credit_timeouts) + " frames=" + std::to_string(o.frames) + " frames_complete=" +
        std::to_string(o.frames_complete) + " window_ns=" + std::to_string(window_ns) + " interrupted=" +
        (o.interrupted ? "1" : "0") + " pm_qos=" + (pm_qos.empty() ? "held" : "refused") + " steps=" + (steps.empty() ? "-" : steps));
    send_records(o.records);
}

std::vector<net::Endpoint> peers_of(const std::string& list) {
    std::vector<net::Endpoint> peers;
    std::istringstream in(list);
    std::string one;
    while (std::getline(in, one, ',')) peers.push_back(net::parse_endpoint(one));
    if (peers.empty()) throw net::SetupError("peers= names no peer");
    return peers;
}

int payload_of(const Params& p) {
    const auto payload = number(p, "payload", 64);
    if (payload < net::kHeaderBytes || payload > net::kMaxPayload)
        throw net::SetupError("payload must be " + std::to_string(net::kHeaderBytes) + ".." + std::to_string(net::kMaxPayload) +
                              " bytes (the header is " + std::to_string(net::kHeaderBytes) + "), got " + std::to_string(payload));
    return static_cast<int>(payload);
}

}  // namespace

int main(int argc, char** argv) {
    bool version = false;
    jl::tool::read_options(kTool, argc, argv, "[--version]",
                           "A node agent of jitterlab net: commands on stdin, answers on stdout (docs/net.md).",
                           {jl::tool::switch_option("--version", "print the tool, its version and protocol version", version)});
    if (version) {
        std::printf("%s %s %d\n", kTool, JITTERLAB_VERSION, net::kProtocolVersion);
        return 0;
    }
    jl::tool::install_signal_handlers();
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    std::string names;
    for (const auto& t : net::transports()) names += (names.empty() ? "" : ",") + t;
    say(std::string("hello ") + kTool + " " + JITTERLAB_VERSION + " " + std::to_string(net::kProtocolVersion) + " " + names);
    std::unique_ptr<net::Responder> responder;
    std::unique_ptr<net::Server> server;
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string command;
        in >> command;
        try {
            const Params p = parse_params(in);
            if (command == "quit") break;
            if (command == "serve") {
                const int payload = payload_of(p);
                responder = std::make_unique<net::Responder>(static_cast<int>(number(p, "node", 0)), payload,
                                                             static_cast<std::size_t>(number(p, "capacity", 4'000'000)));
                server = net::make_server(text(p, "transport"), text(p, "bind"), static_cast<int>(number(p, "port", 0)), payload, *responder);
                say("serving " + std::to_string(server->port()));
            } else if (command == "run") {
                payload_of(p);
                const auto peers = peers_of(text(p, "peers"));
                auto client = net::make_client(text(p, "transport"), peers, static_cast<int>(number(p, "payload", 64)));
                say("ready");
                if (!std::getline(std::cin, line) || line != "go") break;
                const jl::CpuWakeHold awake;
                Scenario scenario(p, *client, static_cast<int>(peers.size()));
                const std::int64_t t0 = jl::now_ns();
                const Outcome o = scenario.run(t0);
                report(o, jl::now_ns() - t0 - number(p, "warmup_ns", 0), awake.error());
            } else if (command == "part") {
                if (!responder) throw net::SetupError("part before serve");
                const auto part = responder->take_records();  // handed over: no longer kept here
                write_block("part", part.data(), part.size());
            } else if (command == "collect") {
                if (!responder) throw net::SetupError("collect before serve");
                say("result received=" + std::to_string(responder->received()) + " dropped_records=" + std::to_string(responder->dropped_records()));
                send_records(responder->take_records());  // what no part has handed over yet
            } else {
                throw net::SetupError("unknown command '" + command + "'");
            }
        } catch (const std::exception& e) {  // SetupError and CAF/system failures alike: one line
            say(std::string("error ") + e.what());
        }
    }
    server.reset();
    return 0;
}
