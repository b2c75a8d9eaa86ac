package dev.jitterlab.jvm;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The n x (1:1) protocol on Apache Pekko typed actors, shaped like the seeds' Akka test and
 * the native CAF technique: a coordinator plays the barrier (it sends Go to every sender once
 * every receiver reported Done); each sender reads the time and a random int of the block and
 * tells its receiver; the receiver writes the int elsewhere, reads the time and records the
 * sample. Senders and receivers run on the chosen dispatcher; every message is a new object.
 */
final class PekkoHarness extends Benchmark {
    static final List<String> DISPATCHERS = List.of("default", "throughput-1", "pinned", "affinity");

    /** The dispatcher variants beside Pekko's default (fork-join pool, throughput 5). */
    private static final String DISPATCHER_CONFIG = """
            pekko.loglevel = WARNING
            pekko.stdout-loglevel = WARNING
            pekko.log-dead-letters = off
            pekko.log-dead-letters-during-shutdown = off
            pekko.coordinated-shutdown.exit-jvm = off
            jitterlab.throughput-1 { type = Dispatcher, executor = fork-join-executor, throughput = 1 }
            jitterlab.pinned { type = PinnedDispatcher, executor = thread-pool-executor }
            jitterlab.affinity { type = Dispatcher, executor = affinity-pool-executor }
            """;

    enum Signal { START, DONE }

    record Go(int round) {}

    private final String dispatcher;
    private final CountDownLatch finished = new CountDownLatch(1);
    private volatile boolean completed;

    PekkoHarness(int pairs, int samples, int warmup, int blockInts, long seed, String dispatcher) {
        super(pairs, samples, warmup, blockInts, seed);
        if (!DISPATCHERS.contains(dispatcher))
            throw new IllegalArgumentException("dispatcher expects one of " + String.join(", ", DISPATCHERS));
        this.dispatcher = dispatcher;
    }

    @Override
    boolean run() throws InterruptedException {
        Config config = ConfigFactory.parseString(DISPATCHER_CONFIG).withFallback(ConfigFactory.load());
        ActorSystem<Signal> system = ActorSystem.create(coordinator(), "jitterlab", config);
        try {
            system.tell(Signal.START);
            finished.await();
        } finally {
            system.terminate();
            system.getWhenTerminated().toCompletableFuture().orTimeout(30, TimeUnit.SECONDS).join();
        }
        return completed && !stop;
    }

    private DispatcherSelector selector() {
        return dispatcher.equals("default")
                ? DispatcherSelector.defaultDispatcher()
                : DispatcherSelector.fromConfig("jitterlab." + dispatcher);
    }

    private Behavior<Signal> coordinator() {
        return Behaviors.setup(context -> {
            List<ActorRef<Go>> senders = new ArrayList<>(pairs);
            for (int p = 0; p < pairs; p++) {
                ActorRef<Message> receiver = context.spawn(receiver(p, context.getSelf()), "receiver-" + p, selector());
                senders.add(context.spawn(sender(p, receiver), "sender-" + p, selector()));
            }
            int[] state = {0, 0};  // next round, receivers done in this round
            return Behaviors.receiveMessage(signal -> {
                if (signal == Signal.DONE && ++state[1] < pairs) return Behaviors.same();
                state[1] = 0;
                if (stop || state[0] == warmup + samples) {
                    completed = state[0] == warmup + samples;
                    finished.countDown();
                    return Behaviors.stopped();
                }
                Go go = new Go(state[0]++);
                for (ActorRef<Go> s : senders) s.tell(go);
                return Behaviors.same();
            });
        });
    }

    private Behavior<Go> sender(int pair, ActorRef<Message> receiver) {
        SplittableRandom random = new SplittableRandom(seed * 7919 + pair);
        boolean[] noted = {false};  // the policy is read on the first message only
        return Behaviors.receiveMessage(go -> {
            if (!noted[0]) noted[0] = note("sender", pair);
            long t = System.nanoTime();
            int value = block[random.nextInt(block.length)];
            receiver.tell(new Message(go.round(), t, value));
            return Behaviors.same();
        });
    }

    private Behavior<Message> receiver(int pair, ActorRef<Signal> coordinator) {
        SplittableRandom random = new SplittableRandom(seed * 104729 + pair);
        PairRecord rec = records()[pair];
        boolean[] noted = {false};
        return Behaviors.receiveMessage(m -> {
            block[random.nextInt(block.length)] = m.value;
            long t = System.nanoTime();
            if (!noted[0]) noted[0] = note("receiver", pair);
            if (m.seq >= warmup) rec.record((int) (m.seq - warmup), m.tSendNs, t);
            coordinator.tell(Signal.DONE);
            return Behaviors.same();
        });
    }

    /** Records the policy of the dispatcher thread that runs an actor's first message. */
    private boolean note(String role, int pair) {
        placements().note(role, pair);
        return true;
    }
}
