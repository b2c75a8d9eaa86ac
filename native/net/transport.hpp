// Transports of `jitterlab-net` (docs/net.md), each a technique behind one interface: a
// Server answers messages through the Responder (the scenario logic every transport shares),
// a Client sends to and receives from one or more peers. udp and tcp are raw sockets; caf-io
// is CAF 0.17's io::publish / remote_actor.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "wire.hpp"

namespace jitterlab::net {

/// A failure the user can fix (a port in use, a peer that does not answer): exit 2.
class SetupError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Endpoint {
    std::string host;
    int port = 0;
};
Endpoint parse_endpoint(const std::string& text);  // "A:P"

/// What a server node does with each message (all transports): echoes pings, counts and
/// timestamps a stream (granting the sender credit: wire.hpp), answers frames. Thread-safe
/// (tcp serves each connection on a thread).
class Responder {
public:
    Responder(int node, int payload, std::size_t capacity);
    /// Handles one message received at `now`; writes a reply into `reply` (payload bytes)
    /// and returns its size, or 0 for no reply.
    int handle(const char* message, int size, char* reply, std::int64_t now);
    /// The stream messages received since the last call (pair 0, sender to this node,
    /// t_send_ns from the sender, t_recv_ns here), handed over: the receiver keeps only what
    /// was not taken yet, so its memory is bounded by what arrives between two calls (the
    /// coordinator asks about every second: ``part``), not by the stream's length. At most
    /// `capacity` records are kept between two calls; beyond, they are counted as dropped.
    /// The lock is held only to swap the buffer for an empty one reserved beforehand, so a
    /// hand-over does not stall the receiving thread.
    std::vector<NetSampleRecord> take_records();
    std::int64_t received() const;
    std::int64_t dropped_records() const;

private:
    int credit(char* reply, std::int64_t now) const;  // the stream's credit (mutex held)

    mutable std::mutex mutex_;
    int node_, payload_;
    std::vector<NetSampleRecord> records_;
    std::size_t capacity_;
    std::int64_t received_ = 0, stream_count_ = 0, stream_start_ = 0, dropped_ = 0;
    std::int64_t stream_step_ = -1, stream_high_ = -1, credit_every_ = 0;
};

class Server {
public:
    virtual ~Server() = default;
    virtual int port() const = 0;
};

class Client {
public:
    virtual ~Client() = default;
    /// Sends `size` bytes to peer `peer`; false when the transport refused (counted by the caller).
    virtual bool send(int peer, const char* data, int size) = 0;
    /// Receives one message before `deadline_ns` into `buf`; its size, or -1 on timeout.
    virtual int recv(char* buf, int capacity, std::int64_t deadline_ns) = 0;
};

std::unique_ptr<Server> make_server(const std::string& transport, const std::string& bind, int port, int payload,
                                    Responder& responder);
std::unique_ptr<Client> make_client(const std::string& transport, const std::vector<Endpoint>& peers, int payload);
std::vector<std::string> transports();

}  // namespace jitterlab::net
