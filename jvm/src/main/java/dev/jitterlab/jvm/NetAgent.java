package dev.jitterlab.jvm;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.Props;
import org.apache.pekko.actor.ExtendedActorSystem;

/**
 * The pekko-artery node agent of {@code jitterlab net} (docs/net.md): the same line protocol
 * and the same message layout as the native {@code jitterlab-net}, with Pekko classic actors
 * talking over Artery TCP remoting. Messages are byte[] (Pekko's ByteArraySerializer): a
 * 32-byte little-endian header (kind, node, seq, t_intended, t_send) padded to the payload.
 * Times are System.nanoTime(), CLOCK_MONOTONIC on Linux, the native agents' clock.
 *
 * <p>Records go over as the native agent's do: {@code samples N} or {@code part N} followed by
 * a whole raw sample file of the run format (docs/run-format.md) holding N 56-byte net records,
 * the columns the stored run has. Ping, frame-sync and open loop hand over parts about every
 * second while they run; a stream's receiver answers {@code part}, and a stream sender told
 * {@code step_pause=1} says {@code stepped K} after each step and waits for {@code next}.
 *
 * <p>Pekko logs to stdout by default, which would corrupt the protocol: stdout is kept for
 * the protocol only and System.out is pointed at stderr.
 *
 * <p>SIGINT, as the native agent takes it (issue 24): the coordinator sends it on Ctrl-C while a
 * scenario runs; the scenario stops at its next check and reports (its result says
 * {@code interrupted=1}, the samples so far follow). Outside a scenario SIGINT ends the agent
 * as the JVM's own handler did (exit 130).
 */
public final class NetAgent {
    static final int HEADER = 32, PING = 1, PONG = 2, START = 3, DATA = 4, END = 5, READY = 6, STATE = 7, FRAME = 8, DONE = 9;
    static final long LATE_NS = 1_000_000;
    static final long PART_NS = 1_000_000_000;  // issue 24 item 10: at most ~1 s of samples only here
    // 2: records are the run format's raw file; 3: a part hands a server's records over (collect
    // gives only those no part gave), so a receiver's memory does not grow with the stream
    static final int PROTOCOL = 3;
    /** A record's fields, in the order of the run format's net record. */
    static final int PAIR = 0, SEQ = 1, SEND = 2, RECV = 3, INTENDED = 4, ACTUAL = 5, SRC = 6, DST = 7;

    private static OutputStream proto;
    /** A scenario is running: SIGINT stops it instead of ending the process. */
    static volatile boolean measuring;
    /** SIGINT arrived while a scenario ran: it stops at its next check and reports. */
    static volatile boolean stopRequested;

    private NetAgent() {}

    static synchronized void say(String line) {
        try {
            proto.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            proto.flush();
        } catch (IOException e) {
            System.exit(0);  // the coordinator is gone
        }
    }

    /**
     * One measured message as the run stores it (the net record): latency counts from the
     * actual send, or with {@code fromIntended} (open loop) from when it was due; a message
     * with no intended time (0) was due when it left.
     */
    static long[] sample(int pair, int src, int dst, long seq, long intended, long sent, long received, boolean fromIntended) {
        long due = intended > 0 ? intended : sent;
        return new long[] {pair, seq, fromIntended ? due : sent, received, due, sent, src, dst};
    }

    /** {@code WORD N} and a raw sample file of records {@code from..to-1} (N of them). */
    static synchronized void writeBlock(String word, List<long[]> records, int from, int to) throws IOException {
        say(word + " " + (to - from));
        writeRaw(proto, records, from, to);
        proto.flush();
    }

    /** Records as a whole raw sample file: header, 56-byte little-endian records, footer. */
    static void writeRaw(OutputStream out, List<long[]> records, int from, int to) throws IOException {
        out.write(RawSampleWriter.header(RawSampleWriter.NET_RECORD_BYTES));
        CRC32 crc = new CRC32();
        ByteBuffer b = ByteBuffer.allocate(RawSampleWriter.NET_RECORD_BYTES * 4096).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = from; i < to; i++) {
            long[] r = records.get(i);
            b.putInt((int) r[PAIR]).putInt(0).putLong(r[SEQ]).putLong(r[SEND]).putLong(r[RECV]).putLong(r[INTENDED])
                    .putLong(r[ACTUAL]).putInt((int) r[SRC]).putInt((int) r[DST]);
            if (!b.hasRemaining() || i == to - 1) {
                crc.update(b.array(), 0, b.position());
                out.write(b.array(), 0, b.position());
                b.clear();
            }
        }
        out.write(RawSampleWriter.footer(to - from, crc.getValue(), false));
    }

    static byte[] message(int payload, int kind, int node, long seq, long intended, long send) {
        byte[] m = new byte[payload];
        ByteBuffer.wrap(m).order(ByteOrder.LITTLE_ENDIAN).putInt(kind).putInt(node).putLong(seq).putLong(intended).putLong(send);
        return m;
    }

    static ByteBuffer header(byte[] m) {
        return ByteBuffer.wrap(m).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** What a server node does with each message; the native Responder's rules. */
    static final class Responder {
        final int node, payload, capacity;
        List<long[]> records = new ArrayList<>();
        long received, streamCount, streamStart, dropped;

        Responder(int node, int payload, int capacity) {
            this.node = node;
            this.payload = payload;
            this.capacity = capacity;
        }

        synchronized byte[] handle(byte[] m, long now) {
            if (m.length < HEADER) return null;
            ByteBuffer h = header(m);
            int kind = h.getInt(0);
            long seq = h.getLong(8), intended = h.getLong(16), send = h.getLong(24);
            received++;
            switch (kind) {
                case PING: {
                    byte[] reply = m.clone();
                    header(reply).putInt(0, PONG).putInt(4, node);
                    return reply;
                }
                case START:
                    streamCount = 0;
                    streamStart = now;
                    return null;
                case DATA:
                    streamCount++;
                    if (records.size() < capacity) records.add(sample(0, h.getInt(4), node, seq, intended, send, now, false));
                    else dropped++;
                    return null;
                case END:
                    return message(payload, READY, node, streamCount, now - streamStart, now);
                case FRAME:
                    return message(payload, DONE, node, seq, now, send);
                default:
                    return null;
            }
        }
    }

    static final class ResponderActor extends AbstractActor {
        private final Responder responder;

        ResponderActor(Responder responder) {
            this.responder = responder;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder().match(byte[].class, m -> {
                byte[] reply = responder.handle(m, System.nanoTime());
                if (reply != null) getSender().tell(reply, getSelf());
            }).build();
        }
    }

    record Received(byte[] message, long at) {}

    /** The client's mailbox: every answer with the time the actor got it. */
    static final class Inbox extends AbstractActor {
        private final LinkedBlockingQueue<Received> queue;

        Inbox(LinkedBlockingQueue<Received> queue) {
            this.queue = queue;
        }

        @Override
        public Receive createReceive() {
            return receiveBuilder().match(byte[].class, m -> queue.add(new Received(m, System.nanoTime()))).build();
        }
    }

    static ActorSystem system(String advertise, String bind, int port) {
        Config config = ConfigFactory.parseString(String.join("\n",
                "pekko.actor.provider = remote",
                "pekko.remote.artery.transport = tcp",
                "pekko.remote.artery.canonical.hostname = \"" + advertise + "\"",
                "pekko.remote.artery.canonical.port = " + port,
                "pekko.remote.artery.bind.hostname = \"" + bind + "\"",
                // the stream scenario sends 100,000 messages before it waits: nothing may be
                // dropped for a full outbound queue (the receiver counts what arrived)
                "pekko.remote.artery.advanced.outbound-message-queue-size = 1048576",
                "pekko.remote.artery.advanced.inbound-lanes = 1",  // two vCPUs: one lane, fewer hand-offs
                "pekko.loglevel = WARNING",
                "pekko.stdout-loglevel = WARNING",
                "pekko.log-dead-letters = off",
                "pekko.log-dead-letters-during-shutdown = off",
                "pekko.coordinated-shutdown.exit-jvm = off",
                "pekko.actor.default-dispatcher.fork-join-executor.parallelism-max = 2"))
                .withFallback(ConfigFactory.load());
        return ActorSystem.create("net", config);
    }

    static Map<String, String> params(String[] words) {
        Map<String, String> p = new HashMap<>();
        for (int i = 1; i < words.length; i++) {
            int eq = words[i].indexOf('=');
            if (eq > 0) p.put(words[i].substring(0, eq), words[i].substring(eq + 1));
        }
        return p;
    }

    static long num(Map<String, String> p, String key, long fallback) {
        String v = p.get(key);
        return v == null ? fallback : Long.parseLong(v);
    }

    static double real(Map<String, String> p, String key, double fallback) {
        String v = p.get(key);
        return v == null ? fallback : Double.parseDouble(v);
    }

    /** SIGINT while measuring: stop and report (the native agent's g_signal); else exit 130. */
    static void stopOnSigint() {
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("INT"), sig -> {
                if (measuring) stopRequested = true;
                else System.exit(130);
            });
        } catch (IllegalArgumentException e) {  // SIGINT ignored (-Xrs) or reserved: the JVM's way
            System.err.println("SIGINT is not handled: " + e.getMessage());
        }
    }

    public static void main(String[] args) throws Exception {
        proto = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out));
        System.setOut(System.err);
        stopOnSigint();
        String version = NetAgent.class.getPackage().getImplementationVersion();
        say("hello jitterlab-net " + (version == null ? "0.0.0-dev" : version) + " " + PROTOCOL + " pekko-artery");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ActorSystem server = null;
        Responder responder = null;
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            Map<String, String> p = params(words);
            try {
                if (words[0].equals("quit")) break;
                switch (words[0]) {
                    case "serve" -> {
                        int payload = (int) num(p, "payload", 64);
                        responder = new Responder((int) num(p, "node", 0), payload, (int) num(p, "capacity", 4_000_000));
                        server = system(p.getOrDefault("advertise", "127.0.0.1"), p.getOrDefault("bind", "0.0.0.0"), (int) num(p, "port", 0));
                        server.actorOf(Props.create(ResponderActor.class, responder), "responder");
                        int port = ((ExtendedActorSystem) server).provider().getDefaultAddress().getPort().get().intValue();
                        say("serving " + port);
                    }
                    case "run" -> {
                        if (!run(p, in)) return;
                    }
                    case "part" -> {
                        if (responder == null) throw new IllegalStateException("part before serve");
                        List<long[]> records;
                        synchronized (responder) {  // handed over: the receiving actor waits only for the swap
                            records = responder.records;
                            responder.records = new ArrayList<>();
                        }
                        writeBlock("part", records, 0, records.size());
                    }
                    case "collect" -> {
                        if (responder == null) throw new IllegalStateException("collect before serve");
                        List<long[]> records;
                        synchronized (responder) {
                            say("result received=" + responder.received + " dropped_records=" + responder.dropped);
                            records = responder.records;  // what no part has handed over
                            responder.records = new ArrayList<>();
                        }
                        writeBlock("samples", records, 0, records.size());
                    }
                    default -> throw new IllegalArgumentException("unknown command '" + words[0] + "'");
                }
            } catch (Exception e) {
                say("error " + (e.getMessage() == null ? e.toString() : e.getMessage()).replace('\n', ' '));
            }
        }
        if (server != null) server.terminate();
        System.exit(0);
    }

    /** Connects, says ready, waits for go, runs the scenario, reports. False: input ended. */
    static boolean run(Map<String, String> p, BufferedReader in) throws Exception {
        ActorSystem system = system(p.getOrDefault("advertise", "127.0.0.1"), "0.0.0.0", 0);
        try {
            LinkedBlockingQueue<Received> queue = new LinkedBlockingQueue<>();
            ActorRef inbox = system.actorOf(Props.create(Inbox.class, queue), "inbox");
            List<ActorRef> peers = new ArrayList<>();
            for (String peer : p.get("peers").split(",")) {
                String path = "pekko://net@" + peer + "/user/responder";
                peers.add(system.actorSelection(path).resolveOne(Duration.ofSeconds(10)).toCompletableFuture().get(15, TimeUnit.SECONDS));
            }
            say("ready");
            String go = in.readLine();
            if (go == null || !go.equals("go")) return false;
            // hold /dev/cpu_dma_latency at 0 while the scenario runs, as the native agent does
            FileOutputStream awake = null;
            String pmQos = "held";
            try {
                awake = new FileOutputStream("/dev/cpu_dma_latency");
                awake.write(new byte[4]);
                awake.flush();
            } catch (IOException e) {
                pmQos = "refused";
            }
            Scenario s = new Scenario(p, peers, inbox, queue, in);
            s.pmQos = pmQos;
            long t0 = System.nanoTime();
            stopRequested = false;
            measuring = true;
            try {
                s.run(t0);
            } finally {
                measuring = false;
            }
            s.report(System.nanoTime() - t0 - num(p, "warmup_ns", 0));
            if (awake != null) awake.close();
            return true;
        } finally {
            system.terminate();
        }
    }

    /** The native agent's scenarios (native/net/agent.cpp), over actors. */
    static final class Scenario {
        final Map<String, String> p;
        final List<ActorRef> peers;
        final ActorRef inbox;
        final LinkedBlockingQueue<Received> queue;
        final BufferedReader in;  // the coordinator's commands ("next" between stream steps)
        final int payload, node;
        final long timeout;
        final List<long[]> records = new ArrayList<>();
        final List<long[]> pending = new ArrayList<>();  // open loop: every request sent, by seq
        final List<String> steps = new ArrayList<>();
        long t0, warmEnd, end, nextProgress, nextPart, sent, answered, lost, late, maxLag, frames, framesComplete;
        int parted, pendingParted;  // records and open-loop requests already handed over in parts
        String parts = "none";  // appended (ping, frame-sync), settled (open loop), none (stream)
        boolean interrupted;
        String pmQos = "refused";
        Received last;

        Scenario(Map<String, String> p, List<ActorRef> peers, ActorRef inbox, LinkedBlockingQueue<Received> queue,
                BufferedReader in) {
            this.p = p;
            this.peers = peers;
            this.inbox = inbox;
            this.queue = queue;
            this.in = in;
            this.payload = (int) num(p, "payload", 64);
            this.node = (int) num(p, "node", 0);
            this.timeout = num(p, "timeout_ns", 1_000_000_000);
        }

        void run(long start) throws InterruptedException, IOException {
            t0 = start;
            warmEnd = t0 + num(p, "warmup_ns", 0);
            end = warmEnd + num(p, "duration_ns", 10_000_000_000L);
            nextPart = warmEnd + PART_NS;
            String scenario = String.valueOf(p.get("scenario"));
            parts = scenario.equals("ping") || scenario.equals("frame-sync") ? "appended"
                    : scenario.equals("open-loop") ? "settled" : "none";
            switch (p.get("scenario")) {
                case "ping" -> ping();
                case "open-loop" -> openLoop(real(p, "rate", 1000));
                case "stream" -> stream(num(p, "messages", 100_000), num(p, "steps", 5));
                case "frame-sync" -> frameSync(real(p, "fps", 60), num(p, "sync", 1) != 0, num(p, "states", 12));
                default -> throw new IllegalArgumentException("unknown scenario '" + p.get("scenario") + "'");
            }
        }

        /** True once SIGINT asked the scenario to stop (then the result says interrupted). */
        boolean stopping() {
            if (stopRequested) interrupted = true;
            return interrupted;
        }

        /** Progress about every 0.2 s and, about every second, the records made final since
         *  the last part (between two messages, never inside a measured round trip). */
        void progress() throws IOException {
            long now = System.nanoTime();
            if (now >= nextProgress) {
                nextProgress = now + 200_000_000;
                say("progress " + Math.max(0, Math.min(now - t0, end - t0)) + " " + (end - t0));
            }
            if (now < nextPart) return;
            nextPart = now + PART_NS;
            if (parts.equals("appended") && records.size() > parted) {
                writeBlock("part", records, parted, records.size());
                parted = records.size();
            } else if (parts.equals("settled")) {
                handOverSettled(now);
            }
        }

        /** Open loop: the requests from the oldest not yet handed over up to the first still
         *  waiting for its answer within the timeout; those answered after the warm-up go over. */
        void handOverSettled(long now) throws IOException {
            List<long[]> settled = new ArrayList<>();
            for (; pendingParted < pending.size(); pendingParted++) {
                long[] r = pending.get(pendingParted);
                if (r[RECV] == 0 && r[INTENDED] + timeout > now) break;  // may still be answered
                if (r[RECV] != 0 && r[INTENDED] >= warmEnd) settled.add(r);
            }
            if (!settled.isEmpty()) writeBlock("part", settled, 0, settled.size());
        }

        long send(int peer, int kind, long seq, long intended) {
            long t = System.nanoTime();
            peers.get(peer).tell(message(payload, kind, node, seq, intended, t), inbox);
            return t;
        }

        /** The next answer before the deadline (in {@code last}), or false. */
        boolean receive(long deadline) throws InterruptedException {
            last = queue.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            return last != null;
        }

        void ping() throws InterruptedException, IOException {
            for (long seq = 0; System.nanoTime() < end && !stopping(); seq++) {
                progress();
                long t = send(0, PING, seq, 0);
                sent++;
                boolean ok = false;
                while (receive(t + timeout)) {
                    ByteBuffer h = header(last.message());
                    if (h.getInt(0) == PONG && h.getLong(8) == seq) {
                        ok = true;
                        break;
                    }
                }
                if (!ok) {
                    lost++;
                    continue;
                }
                answered++;
                if (t >= warmEnd) records.add(sample(0, node, header(last.message()).getInt(4), seq, t, t, last.at(), false));
            }
        }

        void openLoop(double rate) throws InterruptedException, IOException {
            long period = (long) (1e9 / rate);
            for (long seq = 0;; seq++) {
                long due = t0 + seq * period;
                if (due >= end || stopping()) break;
                progress();
                while (System.nanoTime() < due) if (receive(due)) take(pending);
                long t = send(0, PING, seq, due);
                pending.add(sample(0, node, 0, seq, due, t, 0, true));  // answered: RECV and DST set
                sent++;
                long lag = t - due;
                maxLag = Math.max(maxLag, lag);
                if (lag > LATE_NS) late++;
            }
            long grace = System.nanoTime() + timeout;
            while (answered < sent && System.nanoTime() < grace && !stopRequested) if (receive(grace)) take(pending);
            lost = sent - answered;
            for (long[] r : pending) if (r[RECV] != 0 && r[INTENDED] >= warmEnd) records.add(r);
        }

        void take(List<long[]> pending) {
            ByteBuffer h = header(last.message());
            long seq = h.getLong(8);
            if (h.getInt(0) != PONG || seq < 0 || seq >= pending.size()) return;
            long[] r = pending.get((int) seq);
            if (r[RECV] == 0) {
                r[RECV] = last.at();
                r[DST] = h.getInt(4);
                answered++;
            }
        }

        void stream(long messages, long stepCount) throws InterruptedException, IOException {
            boolean stepPause = num(p, "step_pause", 0) != 0;
            for (long step = 0; step < stepCount && !stopping(); step++) {
                // the coordinator collects the receiver's records between steps, while nothing is measured
                if (step > 0 && stepPause && !pausedBetweenSteps(step - 1)) break;
                progress();
                long start = System.nanoTime();
                send(0, START, messages, 0);
                for (long k = 0; k < messages; k++) {
                    send(0, DATA, step * messages + k, 0);
                    // a step longer than a second: progress lets the coordinator pull the receiver's part
                    if ((k & 0x3fff) == 0x3fff) {
                        progress();
                        if (stopping()) break;
                    }
                }
                send(0, END, messages, 0);
                sent += messages;
                boolean ready = false;
                // the receiver's count, within 30 s or the timeout; a stop ends the wait (the
                // step's messages then count as lost, as the native agent counts them)
                long giveUp = System.nanoTime() + Math.max(timeout, 30_000_000_000L);
                while (!ready && System.nanoTime() < giveUp && !stopRequested)
                    if (receive(Math.min(giveUp, System.nanoTime() + 100_000_000)))
                        ready = header(last.message()).getInt(0) == READY;
                long t = System.nanoTime();
                if (!ready) {
                    lost += messages;
                    steps.add("0:0:" + (t - start));
                    continue;
                }
                ByteBuffer h = header(last.message());
                answered += h.getLong(8);
                lost += messages - h.getLong(8);
                steps.add(h.getLong(8) + ":" + h.getLong(16) + ":" + (t - start));
            }
            end = System.nanoTime();
        }

        /** "stepped K", then the coordinator's "next"; false when it is gone. */
        boolean pausedBetweenSteps(long step) throws IOException {
            say("stepped " + step);
            String line = in.readLine();
            if (line != null && line.equals("next")) return true;
            interrupted = true;
            return false;
        }

        void frameSync(double fps, boolean sync, long states) throws InterruptedException, IOException {
            long period = (long) (1e9 / fps);
            List<long[]> frameTimes = new ArrayList<>();  // intended, sent, dones
            long due = t0;
            for (long f = 0; due < end && !stopping(); f++) {
                progress();
                if (sync && f > 0) {
                    long giveUp = System.nanoTime() + timeout;
                    while (frameTimes.get(frameTimes.size() - 1)[2] < peers.size() && System.nanoTime() < giveUp
                            && !stopping())
                        if (receive(giveUp)) done(frameTimes);
                }
                while (System.nanoTime() < due) if (receive(due)) done(frameTimes);
                long t = System.nanoTime();
                frameTimes.add(new long[] {due, t, 0});
                for (int peer = 0; peer < peers.size(); peer++) {
                    for (long k = 0; k < states; k++) send(peer, STATE, f, due);
                    send(peer, FRAME, f, due);
                }
                frames++;
                sent += peers.size();
                long lag = t - due;
                if (!sync && lag > LATE_NS) late++;
                maxLag = Math.max(maxLag, lag);
                due += period;
                if (System.nanoTime() > due) due = System.nanoTime();
            }
            long grace = System.nanoTime() + timeout;
            while (framesComplete < frames && System.nanoTime() < grace && !stopRequested)
                if (receive(grace)) done(frameTimes);
            for (long[] ft : frameTimes) answered += ft[2];
            lost = sent - answered;
        }

        void done(List<long[]> frameTimes) {
            ByteBuffer h = header(last.message());
            long f = h.getLong(8);
            if (h.getInt(0) != DONE || f < 0 || f >= frameTimes.size()) return;
            long[] ft = frameTimes.get((int) f);
            if (++ft[2] == peers.size()) framesComplete++;
            int from = h.getInt(4);
            if (ft[1] >= warmEnd) records.add(sample(from, node, from, f, ft[0], ft[1], h.getLong(16), false));
        }

        void report(long window) throws IOException {
            say("result sent=" + sent + " answered=" + answered + " lost=" + lost + " late=" + late + " max_lag_ns=" + maxLag
                    + " send_failures=0 frames=" + frames + " frames_complete=" + framesComplete + " window_ns=" + window
                    + " interrupted=" + (interrupted ? 1 : 0) + " pm_qos=" + pmQos + " steps="
                    + (steps.isEmpty() ? "-" : String.join(",", steps)));
            writeBlock("samples", records, 0, records.size());
        }
    }
}
