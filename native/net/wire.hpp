// The message every `jitterlab-net` transport carries (docs/net.md): a 32-byte header padded
// to the run's payload size. The seed's 64-byte message (4x4 float32) is a header plus 32
// bytes of padding here; times are CLOCK_MONOTONIC ns of the sending node.
#pragma once

#include <cstdint>
#include <cstring>

namespace jitterlab::net {

inline constexpr int kProtocolVersion = 1;
inline constexpr int kHeaderBytes = 32;
inline constexpr int kMaxPayload = 65000;  // one UDP datagram

enum class Kind : std::uint32_t {
    ping = 1,   // closed or open loop: answered by pong, the same bytes
    pong = 2,
    start = 3,  // stream: seq = messages that follow
    data = 4,   // stream: one message, t_send set
    end = 5,    // stream: answered by ready once the receiver has counted
    ready = 6,  // seq = messages the receiver counted, t_intended = its start-to-end time
    state = 7,  // frame-sync: a state update for a render node
    frame = 8,  // frame-sync: render frame seq
    done = 9,   // frame-sync: the render node got frame seq at t_intended (its clock)
};

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

/// One measured message as the agent returns it (the coordinator adds nodes and stores it).
struct Record {
    std::int32_t pair;
    std::int32_t peer;  // node index of the other end
    std::int64_t seq;
    std::int64_t t_intended;
    std::int64_t t_send;
    std::int64_t t_recv;
};
static_assert(sizeof(Record) == 40);

}  // namespace jitterlab::net
