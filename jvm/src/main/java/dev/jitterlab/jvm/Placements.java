package dev.jitterlab.jvm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The scheduling policy each sender and receiver obtained, read by the thread itself from
 * /proc/thread-self/stat, so a `chrt --rr 90` on the JVM can be checked thread by thread.
 */
final class Placements {
    record Entry(String role, int pair, String thread, String policy, int priority) {}

    private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();

    /** Records the calling thread for (role, pair) once; later calls are free. */
    void note(String role, int pair) {
        entries.computeIfAbsent(role + "/" + pair, k -> {
            String[] p = obtainedPolicy();
            return new Entry(role, pair, Thread.currentThread().getName(), p[0], Integer.parseInt(p[1]));
        });
    }

    List<Entry> entries() {
        List<Entry> out = new ArrayList<>(entries.values());
        out.sort((a, b) -> a.pair() != b.pair() ? Integer.compare(a.pair(), b.pair()) : a.role().compareTo(b.role()));
        return out;
    }

    /**
     * The calling thread's policy and priority, from /proc/thread-self/stat (fields 41 and 40).
     * A virtual thread reports its carrier thread's.
     */
    static String[] obtainedPolicy() {
        try {
            String stat = Files.readString(Path.of("/proc/thread-self/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            int priority = Integer.parseInt(f[37]);
            String policy = switch (Integer.parseInt(f[38])) {
                case 1 -> "fifo";
                case 2 -> "rr";
                case 6 -> "deadline";
                default -> "other";
            };
            return new String[] {policy, Integer.toString(priority)};
        } catch (IOException | RuntimeException e) {
            return new String[] {"unknown", "0"};
        }
    }
}
