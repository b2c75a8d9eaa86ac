// The message every `jitterlab-net` transport carries (docs/net.md): a 32-byte header padded
// to the run's payload size. The seed's 64-byte message (4x4 float32) is a header plus 32
// bytes of padding here; times are CLOCK_MONOTONIC ns of the sending node.
#pragma once

#include <cstdint>
#include <cstring>

#include "jitterlab/runfile.hpp"

namespace jitterlab::net {

using jitterlab::NetSampleRecord;

// 2: records are the run format's raw file; 3: a server's part hands its records over (collect
// gives only those no part gave), so a receiver's memory does not grow with the stream
inline constexpr int kProtocolVersion = 3;
inline constexpr int kHeaderBytes = 32;
inline constexpr int kMaxPayload = 65000;  // one UDP datagram

enum class Kind : std::uint32_t {
    ping = 1,   // closed or open loop: answered by pong, the same bytes
    pong = 2,
    start = 3,  // stream: seq = step, t_intended = credit interval; answered by credit
    data = 4,   // stream: one message, seq = step * messages + k, t_send set
    end = 5,    // stream: t_intended = step; answered by ready once the receiver has counted
    ready = 6,  // seq = messages the receiver counted, t_intended = its start-to-end time, t_send = step
    state = 7,  // frame-sync: a state update for a render node
    frame = 8,  // frame-sync: render frame seq
    done = 9,   // frame-sync: the render node got frame seq at t_intended (its clock)
    credit = 10,  // stream: seq = highest data seq taken this step (-1: none), t_intended = step
};

/// Stream flow control: the sender keeps at most this many bytes (payload plus the kernel's
/// per-datagram overhead, ~1 KiB) beyond the receiver's last credit, well inside the 416 KiB
/// receive buffer a default-configured Linux host gives a udp socket. Without it a receiver
/// that waits for a CPU overflows its socket buffer and the kernel drops datagrams silently.
inline constexpr std::int64_t kCreditBudgetBytes = 256 * 1024;
inline constexpr std::int64_t kDatagramOverheadBytes = 1024;

/// How many data messages the receiver takes between two credits (the sender's window is 4x).
inline constexpr std::int64_t credit_interval(int payload) {
    const std::int64_t n = kCreditBudgetBytes / (payload + kDatagramOverheadBytes) / 4;
    return n > 0 ? n : 1;
}

struct Header {
    Kind kind;
    std::uint32_t node;  // the sender's node index (servers set their own in replies)
    std::int64_t seq;
    std::int64_t t_intended;
    std::int64_t t_send;
};
static_assert(sizeof(Header) == kHeaderBytes);

inline Header read_header(const void* data) {
    Header h{};
    std::memcpy(&h, data, sizeof h);
    return h;
}

inline void write_header(void* data, const Header& h) { std::memcpy(data, &h, sizeof h); }

/// One measured message as the agent hands it over: the run format's net record
/// (docs/run-format.md), the columns the stored run has. Latency counts from `t_send_ns`:
/// the actual send, or in open loop the time the message was due (coordinated omission
/// corrected); a message with no intended time (0) was due when it left.
inline NetSampleRecord sample(std::int32_t pair, std::int32_t src, std::int32_t dst, std::int64_t seq, std::int64_t intended,
                              std::int64_t sent, std::int64_t received, bool from_intended = false) {
    const std::int64_t due = intended > 0 ? intended : sent;
    return {pair, 0, seq, from_intended ? due : sent, received, due, sent, src, dst};
}

}  // namespace jitterlab::net
