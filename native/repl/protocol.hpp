// The replication benchmark's wire format (docs/replication.md): little-endian, fixed
// offsets, read and written with memcpy so no struct padding or alignment matters.
//
// client -> server   pose  = PoseHeader (24 B) + filler up to --payload bytes
//                    ping  = PoseHeader with kind ping (24 B)
// server -> client   pong  = the ping echoed with kind pong, then t_tick_ns (8 B): when the
//                            server tick that answered it began (32 B in all)
//                    updates = ServerHeader (28 B) + whole poses of other avatars, so a
//                    datagram never exceeds kMaxDatagram (1200 B): the largest pose is 1172 B.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace jitterlab::repl {

static_assert(std::endian::native == std::endian::little, "the wire format is little-endian");

inline constexpr std::uint32_t kMagic = 0x504C524A;  // "JRLP" read as bytes
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kMaxDatagram = 1200;
inline constexpr std::size_t kPoseHeader = 24;
inline constexpr std::size_t kServerHeader = 28;
inline constexpr std::size_t kPong = kPoseHeader + 8;  // the ping's header, then the answering tick's start
inline constexpr std::size_t kMaxPose = kMaxDatagram - kServerHeader;  // 1172

enum class Kind : std::uint8_t { pose = 1, ping = 2, pong = 3, updates = 4 };

/// The head of every client datagram and of every pose inside an updates datagram.
struct PoseHeader {
    Kind kind = Kind::pose;
    std::uint16_t client = 0;
    std::uint32_t seq = 0;
    std::uint32_t size = 0;  // bytes of the whole pose, header included
    std::int64_t t_send_ns = 0;
};

/// The head of an updates datagram.
struct ServerHeader {
    std::uint16_t count = 0;  // poses that follow
    std::uint32_t tick = 0;
    std::int64_t t_tick_ns = 0;  // when the server tick that sent it began
};

template <typename T>
inline void put(std::byte* at, T v) noexcept { std::memcpy(at, &v, sizeof v); }
template <typename T>
inline T get(const std::byte* at) noexcept {
    T v;
    std::memcpy(&v, at, sizeof v);
    return v;
}

inline void write_pose_header(std::byte* at, const PoseHeader& h) noexcept {
    put(at + 0, kMagic);
    put(at + 4, static_cast<std::uint8_t>(h.kind));
    put(at + 5, kVersion);
    put(at + 6, h.client);
    put(at + 8, h.seq);
    put(at + 12, h.size);
    put(at + 16, h.t_send_ns);
}

/// Reads a pose header from `bytes`; false when it is not one of ours or is cut short.
inline bool read_pose_header(std::span<const std::byte> bytes, PoseHeader& h) noexcept {
    if (bytes.size() < kPoseHeader || get<std::uint32_t>(bytes.data()) != kMagic ||
        get<std::uint8_t>(bytes.data() + 5) != kVersion)
        return false;
    h.kind = static_cast<Kind>(get<std::uint8_t>(bytes.data() + 4));
    h.client = get<std::uint16_t>(bytes.data() + 6);
    h.seq = get<std::uint32_t>(bytes.data() + 8);
    h.size = get<std::uint32_t>(bytes.data() + 12);
    h.t_send_ns = get<std::int64_t>(bytes.data() + 16);
    return h.size >= kPoseHeader && h.size <= bytes.size();
}

inline void write_server_header(std::byte* at, const ServerHeader& h) noexcept {
    put(at + 0, kMagic);
    put(at + 4, static_cast<std::uint8_t>(Kind::updates));
    put(at + 5, kVersion);
    put(at + 6, h.count);
    put(at + 8, h.tick);
    put(at + 12, std::uint32_t{0});
    put(at + 16, h.t_tick_ns);
    put(at + 24, std::uint32_t{0});
}

inline bool read_server_header(std::span<const std::byte> bytes, ServerHeader& h) noexcept {
    if (bytes.size() < kServerHeader || get<std::uint32_t>(bytes.data()) != kMagic ||
        get<std::uint8_t>(bytes.data() + 4) != static_cast<std::uint8_t>(Kind::updates) ||
        get<std::uint8_t>(bytes.data() + 5) != kVersion)
        return false;
    h.count = get<std::uint16_t>(bytes.data() + 6);
    h.tick = get<std::uint32_t>(bytes.data() + 8);
    h.t_tick_ns = get<std::int64_t>(bytes.data() + 16);
    return true;
}

/// Poses of one size per updates datagram.
constexpr std::size_t poses_per_datagram(std::size_t pose_bytes) noexcept {
    return (kMaxDatagram - kServerHeader) / pose_bytes;
}

/// Datagrams needed to carry `poses` poses.
constexpr std::size_t datagrams_for(std::size_t poses, std::size_t pose_bytes) noexcept {
    const std::size_t per = poses_per_datagram(pose_bytes);
    return (poses + per - 1) / per;
}

}  // namespace jitterlab::repl
