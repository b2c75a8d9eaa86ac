// jitterlab-net's transports and the scenario logic every server shares (docs/net.md):
// the Responder's answers, and real udp and tcp servers and clients on loopback.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../net/transport.hpp"
#include "jitterlab/clock.hpp"

namespace net = jitterlab::net;

namespace {

std::vector<char> message(net::Kind kind, std::int64_t seq, int payload = 64) {
    std::vector<char> m(static_cast<std::size_t>(payload), 0);
    net::write_header(m.data(), {kind, 0, seq, 111, 222});
    return m;
}

}  // namespace

TEST(NetResponder, PingIsAnsweredWithThePayloadAndTheServersNode) {
    net::Responder r(3, 64, 16);
    auto ping = message(net::Kind::ping, 7);
    ping[40] = 'x';
    std::vector<char> reply(64);
    ASSERT_EQ(r.handle(ping.data(), 64, reply.data(), 1000), 64);
    const net::Header h = net::read_header(reply.data());
    EXPECT_EQ(h.kind, net::Kind::pong);
    EXPECT_EQ(h.node, 3u);
    EXPECT_EQ(h.seq, 7);
    EXPECT_EQ(h.t_send, 222);
    EXPECT_EQ(reply[40], 'x');
}

TEST(NetResponder, StreamCountsAndTimesStartToEndAndKeepsEveryMessage) {
    net::Responder r(1, 64, 2);
    std::vector<char> reply(64);
    EXPECT_EQ(r.handle(message(net::Kind::start, 3).data(), 64, reply.data(), 100), 64);  // step 3 confirmed
    const net::Header confirmed = net::read_header(reply.data());
    EXPECT_EQ(confirmed.kind, net::Kind::credit);
    EXPECT_EQ(confirmed.t_intended, 3);  // the step
    EXPECT_EQ(confirmed.seq, -1);        // nothing taken yet
    for (int k = 0; k < 3; ++k) EXPECT_EQ(r.handle(message(net::Kind::data, k).data(), 64, reply.data(), 200 + k), 0);
    ASSERT_EQ(r.handle(message(net::Kind::end, 3).data(), 64, reply.data(), 500), 64);
    const net::Header ready = net::read_header(reply.data());
    EXPECT_EQ(ready.kind, net::Kind::ready);
    EXPECT_EQ(ready.seq, 3);            // counted
    EXPECT_EQ(ready.t_intended, 400);  // start to end on the receiver's clock
    EXPECT_EQ(ready.t_send, 111);      // the step the end named (its t_intended)
    const auto records = r.take_records();
    ASSERT_EQ(records.size(), 2u);  // capacity 2: the third is counted as dropped, not stored
    EXPECT_EQ(r.dropped_records(), 1);
    EXPECT_EQ(records[1].t_send_ns, 222);
    EXPECT_EQ(records[1].t_recv_ns, 201);
    EXPECT_EQ(records[1].t_actual_send_ns, 222);
    EXPECT_EQ(records[1].t_intended_ns, 111);  // what the message says (0 would mean: due when sent)
    EXPECT_EQ(records[1].src_node, 0);
    EXPECT_EQ(records[1].dst_node, 1);  // this receiver
}

TEST(NetWire, ASampleIsTheRunFormatsNetRecord) {
    // the record an agent hands over is the run format's (raw-samples.json extended_records.net)
    const auto closed = net::sample(0, 0, 2, 5, 0, 100, 300);  // no intended time: due when sent
    EXPECT_EQ(closed.t_send_ns, 100);
    EXPECT_EQ(closed.t_intended_ns, 100);
    EXPECT_EQ(closed.dst_node, 2);
    const auto open = net::sample(0, 0, 1, 6, 90, 100, 300, true);  // open loop: from when it was due
    EXPECT_EQ(open.t_send_ns, 90);
    EXPECT_EQ(open.t_actual_send_ns, 100);
    EXPECT_EQ(open.reserved, 0);
}

TEST(NetResponder, TakeRecordsHandsOverTheNewOnesAndKeepsNothingTaken) {
    // what the coordinator asks a stream's receiver for about every second (issue 24 item 10):
    // taken records are no longer held, so the receiver's memory does not grow with the
    // stream (issue 25 item 3), and collect gets only what no part took
    net::Responder r(1, 64, 4);
    std::vector<char> reply(64);
    r.handle(message(net::Kind::start, 0).data(), 64, reply.data(), 100);
    for (int k = 0; k < 3; ++k) r.handle(message(net::Kind::data, k).data(), 64, reply.data(), 200 + k);
    const auto first = r.take_records();
    ASSERT_EQ(first.size(), 3u);
    EXPECT_EQ(first[2].seq, 2);
    EXPECT_TRUE(r.take_records().empty());  // nothing new
    // capacity 4 bounds what is held between two hand-overs, not the stream: 4 more fit
    for (int k = 3; k < 7; ++k) r.handle(message(net::Kind::data, k).data(), 64, reply.data(), 200 + k);
    const auto second = r.take_records();
    ASSERT_EQ(second.size(), 4u);
    EXPECT_EQ(second[0].seq, 3);
    EXPECT_EQ(second[3].t_recv_ns, 206);
    EXPECT_EQ(r.dropped_records(), 0);
    EXPECT_TRUE(r.take_records().empty());  // collect after the parts: nothing twice
}

std::vector<char> start(std::int64_t step, std::int64_t credit_every) {
    std::vector<char> m(64, 0);
    net::write_header(m.data(), {net::Kind::start, 0, step, credit_every, 0});
    return m;
}

TEST(NetResponder, StreamCreditEveryNMessagesNamesTheHighestTaken) {
    net::Responder r(1, 64, 100);
    std::vector<char> reply(64);
    ASSERT_EQ(r.handle(start(0, 4).data(), 64, reply.data(), 1), 64);
    for (int k : {0, 1, 3, 2, 5, 6, 7}) {  // 4 was lost on the way
        const int n = r.handle(message(net::Kind::data, k).data(), 64, reply.data(), 2);
        if (k == 2) {  // the 4th taken: a credit
            ASSERT_EQ(n, 64);
            EXPECT_EQ(net::read_header(reply.data()).kind, net::Kind::credit);
            EXPECT_EQ(net::read_header(reply.data()).seq, 3);  // the highest, not the count
        } else {
            EXPECT_EQ(n, 0) << k;
        }
    }
}

TEST(NetResponder, ARepeatedStartDoesNotResetTheCountButANewStepDoes) {
    net::Responder r(1, 64, 100);
    std::vector<char> reply(64);
    r.handle(start(0, 0).data(), 64, reply.data(), 1);
    r.handle(message(net::Kind::data, 0).data(), 64, reply.data(), 2);
    EXPECT_EQ(r.handle(start(0, 0).data(), 64, reply.data(), 3), 64);  // its credit was lost: confirmed again
    EXPECT_EQ(net::read_header(reply.data()).seq, 0);
    r.handle(message(net::Kind::end, 0).data(), 64, reply.data(), 4);
    EXPECT_EQ(net::read_header(reply.data()).seq, 1);  // still counted
    r.handle(start(1, 0).data(), 64, reply.data(), 5);
    r.handle(message(net::Kind::end, 0).data(), 64, reply.data(), 6);
    EXPECT_EQ(net::read_header(reply.data()).seq, 0);  // the next step counts afresh
}

TEST(NetResponder, AFrameIsAnsweredWithWhenItArrived) {
    net::Responder r(2, 64, 1);
    std::vector<char> reply(64);
    EXPECT_EQ(r.handle(message(net::Kind::state, 5).data(), 64, reply.data(), 10), 0);
    ASSERT_EQ(r.handle(message(net::Kind::frame, 5).data(), 64, reply.data(), 900), 64);
    const net::Header done = net::read_header(reply.data());
    EXPECT_EQ(done.kind, net::Kind::done);
    EXPECT_EQ(done.node, 2u);
    EXPECT_EQ(done.seq, 5);
    EXPECT_EQ(done.t_intended, 900);
}

TEST(NetResponder, AShortMessageIsIgnored) {
    net::Responder r(1, 64, 1);
    std::vector<char> reply(64), shorty(8, 0);
    EXPECT_EQ(r.handle(shorty.data(), 8, reply.data(), 1), 0);
}

class NetLoopback : public ::testing::TestWithParam<const char*> {};

TEST_P(NetLoopback, PingRoundTripsThroughARealServer) {
    net::Responder r(1, 64, 16);
    auto server = net::make_server(GetParam(), "127.0.0.1", 0, 64, r);
    auto client = net::make_client(GetParam(), {{"127.0.0.1", server->port()}}, 64);
    std::vector<char> in(net::kMaxPayload);
    for (int seq = 0; seq < 50; ++seq) {
        auto ping = message(net::Kind::ping, seq);
        ASSERT_TRUE(client->send(0, ping.data(), 64));
        const int n = client->recv(in.data(), static_cast<int>(in.size()), jitterlab::now_ns() + 2'000'000'000);
        ASSERT_EQ(n, 64);
        EXPECT_EQ(net::read_header(in.data()).seq, seq);
    }
    EXPECT_EQ(r.received(), 50);
    EXPECT_EQ(client->recv(in.data(), static_cast<int>(in.size()), jitterlab::now_ns() + 10'000'000), -1);  // nothing more
}

TEST_P(NetLoopback, ASecondServerOnTheSamePortIsASetupError) {
    net::Responder r(1, 64, 1);
    auto first = net::make_server(GetParam(), "127.0.0.1", 0, 64, r);
    EXPECT_THROW(net::make_server(GetParam(), "127.0.0.1", first->port(), 64, r), net::SetupError);
}

INSTANTIATE_TEST_SUITE_P(Transports, NetLoopback, ::testing::Values("udp", "tcp"));

TEST(NetEndpoint, ParsesAddressAndPortAndRefusesNonsense) {
    const auto e = net::parse_endpoint("10.213.1.2:4000");
    EXPECT_EQ(e.host, "10.213.1.2");
    EXPECT_EQ(e.port, 4000);
    EXPECT_THROW(net::parse_endpoint("nohost"), net::SetupError);
    EXPECT_THROW(net::parse_endpoint("h:x"), net::SetupError);
}
