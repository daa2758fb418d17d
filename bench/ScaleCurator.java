import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;

/**
 * One Java Curator case of the bench's scale section, in a JVM of its own: the counterpart of
 * {@code bench/scale_case.py}, with the same protocol and the same JSON.
 *
 * <p>{@code java ScaleCurator CASE HOSTS N} takes N items (N paths; N waiters on one path for
 * {@code waiters}), prints {@code {"event": "bounce"}} and samples its threads until a line
 * arrives on stdin (the parent has bounced the server), waits for the items to be back, and
 * releases everything; then prints {@code {"event": "result", ...}}. Threads are the OS's
 * ({@code /proc/self/status}, the JVM's own GC and compiler threads included) and the JVM's
 * ({@code ThreadMXBean}); memory is RSS and the heap used after {@code System.gc()}. Curator
 * has no notice of a lost lock: a lock counts as held while Curator says so.
 */
public final class ScaleCurator {
    static final int SOON_S = 60;
    static final int MAX_LEASES = 2;
    static final double QUIET_S = 30.0;
    static final double RECOVER_LIMIT_S = 300.0;
    static final long SETTLE_MS = 1000;

    static String hosts;
    /** Connections lost (SUSPENDED or LOST) in each phase: take, bounce, release. */
    static final Map<String, Integer> losses = new java.util.concurrent.ConcurrentHashMap<>();
    static volatile String phase = "take";

    public static void main(String[] args) throws Exception {
        String name = args[0];
        hosts = args[1];
        int n = Integer.parseInt(args[2]);
        CuratorFramework client = CuratorFrameworkFactory.newClient(
            hosts, 30000, 15000, new ExponentialBackoffRetry(1000, 3));
        client.start();
        if (!client.blockUntilConnected(SOON_S, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not connected to " + hosts);
        }
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (!state.isConnected()) {
                losses.merge(phase, 1, Integer::sum);
            }
        });
        String root = "/pycurator-bench/scale/curator-" + name + "-" + System.nanoTime();
        Case c = make(name, client, root, n);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("event", "result");
        result.put("case", "curator-" + name);
        result.put("n", n);
        try {
            measure(c, result);
        } catch (Exception e) {
            Map<String, Object> failed = new LinkedHashMap<>();
            failed.put("event", "result");
            failed.put("case", "curator-" + name);
            failed.put("n", n);
            failed.put("error", e.toString());
            failed.put("connection_losses", losses);
            emit(failed);
            e.printStackTrace();
            Runtime.getRuntime().halt(1); // the client may be stuck: the server ends the session
        }
        client.close();
        result.put("connection_losses", losses);
        emit(result);
        System.exit(0);
    }

    static Case make(String name, CuratorFramework client, String root, int n) {
        switch (name) {
            case "mutex":
            case "read":
            case "write":
            case "semaphore-mutex":
                return new Locks(client, root, n, name);
            case "semaphore": return new Leases(client, root, n);
            case "latch": return new Latches(client, root, n);
            case "selector": return new Selectors(client, root, n);
            case "waiters": return new Waiters(client, root, n);
            default: throw new IllegalArgumentException("unknown case " + name);
        }
    }

    // -- the cases -----------------------------------------------------------------------------

    abstract static class Case {
        final CuratorFramework client;
        final String root;
        final int n;

        Case(CuratorFramework client, String root, int n) {
            this.client = client;
            this.root = root;
            this.n = n;
        }

        String path(int i) {
            return String.format("%s/%05d", root, i);
        }

        int size() {
            return n;
        }

        long pollMillis() {
            return 20;
        }

        abstract void take() throws Exception;

        /** Whether item i is held, as Curator says (no request). */
        abstract boolean held(int i);

        /** The node whose children hold item i's node. */
        String parent(int i) {
            return path(i);
        }

        abstract void release() throws Exception;

        /** Items held now; -1 when it cannot be told yet. */
        int heldCount() throws Exception {
            int count = 0;
            for (int i = 0; i < n; i++) {
                count += held(i) ? 1 : 0;
            }
            return count;
        }

        /** What Curator says against the server: held (and ours), lost, wrong. */
        Map<String, Object> truth() throws Exception {
            long session = client.getZookeeperClient().getZooKeeper().getSessionId();
            int held = 0, lost = 0, lostButOurs = 0, wrong = 0;
            for (int i = 0; i < n; i++) {
                boolean said = held(i);
                boolean ours = ownsChild(client, parent(i), session);
                held += said && ours ? 1 : 0;
                lost += said ? 0 : 1;
                lostButOurs += !said && ours ? 1 : 0;
                wrong += said && !ours ? 1 : 0;
            }
            return counts(held, lost, lostButOurs, wrong);
        }
    }

    static Map<String, Object> counts(int held, int lost, int lostButOurs, int wrong) {
        Map<String, Object> found = new LinkedHashMap<>();
        found.put("held", held);
        found.put("lost", lost);
        found.put("lost_but_ours", lostButOurs);
        found.put("wrong", wrong);
        return found;
    }

    static boolean ownsChild(CuratorFramework client, String parent, long session)
            throws Exception {
        if (client.checkExists().forPath(parent) == null) {
            return false;
        }
        for (String child : client.getChildren().forPath(parent)) {
            Stat stat = client.checkExists().forPath(parent + "/" + child);
            if (stat != null && stat.getEphemeralOwner() == session) {
                return true;
            }
        }
        return false;
    }

    /** A lock of one kind per path, all held by the main thread. */
    static final class Locks extends Case {
        final String kind;
        final List<InterProcessLock> locks = new ArrayList<>();

        Locks(CuratorFramework client, String root, int n, String kind) {
            super(client, root, n);
            this.kind = kind;
        }

        InterProcessLock make(String path) {
            switch (kind) {
                case "read": return new InterProcessReadWriteLock(client, path).readLock();
                case "write": return new InterProcessReadWriteLock(client, path).writeLock();
                case "semaphore-mutex": return new InterProcessSemaphoreMutex(client, path);
                default: return new InterProcessMutex(client, path);
            }
        }

        void take() throws Exception {
            for (int i = 0; i < n; i++) {
                InterProcessLock lock = make(path(i));
                if (!lock.acquire(SOON_S, TimeUnit.SECONDS)) {
                    throw new IllegalStateException(kind + " " + i + " not acquired");
                }
                locks.add(lock);
            }
        }

        boolean held(int i) {
            return locks.get(i).isAcquiredInThisProcess();
        }

        String parent(int i) {
            return kind.equals("semaphore-mutex") ? path(i) + "/leases" : path(i);
        }

        void release() throws Exception {
            for (InterProcessLock lock : locks) {
                lock.release();
            }
        }
    }

    /** A semaphore of MAX_LEASES per path, one lease of each held. */
    static final class Leases extends Case {
        final List<InterProcessSemaphoreV2> semaphores = new ArrayList<>();
        final List<Lease> leases = new ArrayList<>();

        Leases(CuratorFramework client, String root, int n) {
            super(client, root, n);
        }

        void take() throws Exception {
            for (int i = 0; i < n; i++) {
                InterProcessSemaphoreV2 semaphore =
                    new InterProcessSemaphoreV2(client, path(i), MAX_LEASES);
                Lease lease = semaphore.acquire(SOON_S, TimeUnit.SECONDS);
                if (lease == null) {
                    throw new IllegalStateException("lease " + i + " not acquired");
                }
                semaphores.add(semaphore);
                leases.add(lease);
            }
        }

        boolean held(int i) {
            return true; // a Curator lease knows nothing of its node once acquired
        }

        String parent(int i) {
            return path(i) + "/leases";
        }

        void release() throws Exception {
            for (Lease lease : leases) {
                lease.close();
            }
        }
    }

    /** A LeaderLatch per path, each leading. */
    static final class Latches extends Case {
        final List<LeaderLatch> latches = new ArrayList<>();

        Latches(CuratorFramework client, String root, int n) {
            super(client, root, n);
        }

        void take() throws Exception {
            for (int i = 0; i < n; i++) {
                LeaderLatch latch = new LeaderLatch(client, path(i));
                latch.start();
                latches.add(latch);
            }
            for (int i = 0; i < n; i++) {
                if (!latches.get(i).await(SOON_S, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("latch " + i + " not leading");
                }
            }
        }

        boolean held(int i) {
            return latches.get(i).hasLeadership();
        }

        void release() throws Exception {
            for (LeaderLatch latch : latches) {
                latch.close();
            }
        }
    }

    /** A LeaderSelector per path (auto-requeue), each leading until interrupted. */
    static final class Selectors extends Case {
        final List<LeaderSelector> selectors = new ArrayList<>();

        Selectors(CuratorFramework client, String root, int n) {
            super(client, root, n);
        }

        void take() throws Exception {
            for (int i = 0; i < n; i++) {
                LeaderSelector selector = new LeaderSelector(client, path(i),
                    new LeaderSelectorListenerAdapter() {
                        @Override
                        public void takeLeadership(CuratorFramework c) throws Exception {
                            new CountDownLatch(1).await(); // until interrupted
                        }
                    });
                selector.autoRequeue();
                selector.start();
                selectors.add(selector);
            }
            until(() -> {
                for (LeaderSelector selector : selectors) {
                    if (!selector.hasLeadership()) {
                        return false;
                    }
                }
                return true;
            }, "every selector leading", 5 * SOON_S);
        }

        boolean held(int i) {
            return selectors.get(i).hasLeadership();
        }

        void release() {
            for (LeaderSelector selector : selectors) {
                selector.close();
            }
        }
    }

    /** One holder and N waiters behind it on one path, a thread each, drained at the end. */
    static final class Waiters extends Case {
        final String queue;
        final InterProcessMutex holder;
        final List<Thread> threads = new ArrayList<>();
        final AtomicInteger done = new AtomicInteger();
        final AtomicInteger failed = new AtomicInteger();

        Waiters(CuratorFramework client, String root, int n) {
            super(client, root, n);
            queue = root + "/queue";
            holder = new InterProcessMutex(client, queue);
        }

        int size() {
            return n + 1;
        }

        long pollMillis() {
            return 200;
        }

        void take() throws Exception {
            if (!holder.acquire(SOON_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException("holder not acquired");
            }
            for (int i = 0; i < n; i++) {
                Thread thread = new Thread(() -> {
                    InterProcessMutex lock = new InterProcessMutex(client, queue);
                    try {
                        lock.acquire();
                        lock.release();
                        done.incrementAndGet();
                    } catch (Exception e) {
                        failed.incrementAndGet();
                    }
                });
                thread.setDaemon(true);
                thread.start();
                threads.add(thread);
            }
            until(() -> queued() == n, "every waiter queued", 10 * SOON_S);
            until(() -> counter("zk_watch_count") >= n, "every waiter watching", 10 * SOON_S);
        }

        int queued() {
            try {
                return client.getChildren().forPath(queue).size() - 1;
            } catch (Exception e) {
                return -1;
            }
        }

        boolean held(int i) {
            return holder.isAcquiredInThisProcess();
        }

        int heldCount() {
            if (!client.getZookeeperClient().isConnected()) {
                return -1;
            }
            int waiting = queued();
            return waiting < 0 ? -1 : 1 + waiting - done.get();
        }

        Map<String, Object> truth() throws Exception {
            long session = client.getZookeeperClient().getZooKeeper().getSessionId();
            boolean said = holder.isAcquiredInThisProcess();
            List<String> children = client.getChildren().forPath(queue);
            children.sort((a, b) -> a.substring(a.lastIndexOf("lock-"))
                .compareTo(b.substring(b.lastIndexOf("lock-"))));
            Stat first = children.isEmpty()
                ? null : client.checkExists().forPath(queue + "/" + children.get(0));
            boolean ours = first != null && first.getEphemeralOwner() == session;
            int waiting = children.size() - 1;
            return counts((said && ours ? 1 : 0) + waiting, (said ? 0 : 1) + n - waiting,
                !said && ours ? 1 : 0, (said && !ours ? 1 : 0) + (said ? done.get() : 0));
        }

        void release() throws Exception {
            holder.release();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10 * SOON_S);
            for (Thread thread : threads) {
                thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime())));
            }
            if (failed.get() > 0) {
                throw new IllegalStateException(failed.get() + " waiters failed");
            }
        }
    }

    // -- measuring -----------------------------------------------------------------------------

    static void measure(Case c, Map<String, Object> result) throws Exception {
        Thread.sleep(SETTLE_MS);
        long watches = counter("zk_watch_count"); // Curator's own: its ensemble tracker's
        Map<String, Object> base = sample();
        long started = System.nanoTime();
        c.take();
        double took = seconds(started);
        Thread.sleep(SETTLE_MS);
        Map<String, Object> steady = sample();
        result.put("items", c.size());
        result.put("baseline", base);
        result.put("acquire_s", took);
        result.put("steady", steady);
        result.put("rss_kb_per_item", perItem(steady, base, "rss_kb", c.n));
        result.put("heap_kb_per_item", perItem(steady, base, "heap_kb", c.n));
        result.put("threads_per_item", perItem(steady, base, "threads", c.n));
        phase = "bounce";
        result.put("bounce", bounce(c));
        phase = "release";
        started = System.nanoTime();
        c.release();
        until(() -> counter("zk_ephemerals_count") == 0, "every node deleted", SOON_S);
        result.put("release_s", seconds(started));
        Thread.sleep(SETTLE_MS);
        Map<String, Object> after = new LinkedHashMap<>();
        after.put("threads", osThreads());
        after.put("java_threads", ManagementFactory.getThreadMXBean().getThreadCount());
        after.put("ephemerals", counter("zk_ephemerals_count"));
        after.put("watches", counter("zk_watch_count") - watches);
        result.put("after_release", after);
    }

    static Map<String, Object> bounce(Case c) throws Exception {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        mx.resetPeakThreadCount();
        int peak = osThreads();
        long started = System.nanoTime();
        emit(Map.of("event", "bounce"));
        while (System.in.available() == 0) {
            peak = Math.max(peak, osThreads());
            Thread.sleep(5);
        }
        stdin.readLine();
        long restarted = System.nanoTime();
        int held = Integer.MIN_VALUE;
        long changed = restarted;
        long nextLook = restarted;
        while (true) {
            peak = Math.max(peak, osThreads());
            long now = System.nanoTime();
            if (now >= nextLook) {
                int count = c.heldCount();
                nextLook = now + TimeUnit.MILLISECONDS.toNanos(c.pollMillis());
                if (count != held) {
                    held = count;
                    changed = now;
                }
                boolean connected = c.client.getZookeeperClient().isConnected();
                boolean quiet = connected && (now - changed) / 1e9 > QUIET_S;
                if ((held == c.size() && connected) || quiet
                        || (now - restarted) / 1e9 > RECOVER_LIMIT_S) {
                    break;
                }
            }
            Thread.sleep(5);
        }
        long back = System.nanoTime();
        while (System.nanoTime() < back + TimeUnit.MILLISECONDS.toNanos(SETTLE_MS)) {
            peak = Math.max(peak, osThreads());
            Thread.sleep(5);
        }
        Map<String, Object> found = new LinkedHashMap<>();
        found.put("peak_threads", peak);
        found.put("peak_java_threads", mx.getPeakThreadCount());
        found.put("threads_after", osThreads());
        found.put("all_back", held == c.size());
        found.put("back_after_restart_s", (back - restarted) / 1e9);
        found.put("bounce_s", (back - started) / 1e9);
        found.putAll(c.truth());
        return found;
    }

    static Map<String, Object> sample() {
        System.gc();
        System.gc();
        Map<String, Object> found = new LinkedHashMap<>();
        found.put("threads", osThreads());
        found.put("java_threads", ManagementFactory.getThreadMXBean().getThreadCount());
        found.put("rss_kb", status("VmRSS"));
        long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        found.put("heap_kb", heap / 1024);
        return found;
    }

    static double perItem(Map<String, Object> after, Map<String, Object> before, String key,
            int n) {
        return (((Number) after.get(key)).doubleValue() - ((Number) before.get(key)).doubleValue())
            / n;
    }

    static double seconds(long started) {
        return (System.nanoTime() - started) / 1e9;
    }

    static int osThreads() {
        return (int) status("Threads");
    }

    /** A number from /proc/self/status (kB for the memory lines). */
    static long status(String key) {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
                if (line.startsWith(key + ":")) {
                    return Long.parseLong(line.substring(key.length() + 1).trim().split("\\s+")[0]);
                }
            }
        } catch (Exception e) {
            // not Linux: reported as -1
        }
        return -1;
    }

    /** A counter of the server's {@code mntr} four-letter word; -1 when not found. */
    static long counter(String key) {
        String[] address = hosts.split(",")[0].split("/")[0].split(":");
        try (Socket socket = new Socket(address[0], Integer.parseInt(address[1]))) {
            OutputStream out = socket.getOutputStream();
            out.write("mntr".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            for (String line : text.split("\n")) {
                String[] parts = line.split("\t");
                if (parts.length == 2 && parts[0].equals(key)) {
                    return (long) Double.parseDouble(parts[1].trim());
                }
            }
        } catch (Exception e) {
            return -1;
        }
        return -1;
    }

    static void until(BooleanSupplier predicate, String what, int seconds) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!predicate.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new IllegalStateException("not within " + seconds + "s: " + what);
            }
            Thread.sleep(50);
        }
    }

    // -- output --------------------------------------------------------------------------------

    static void emit(Map<String, Object> message) {
        System.out.println(json(message));
        System.out.flush();
    }

    static String json(Object value) {
        if (value instanceof Map) {
            StringBuilder out = new StringBuilder("{");
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                if (out.length() > 1) {
                    out.append(", ");
                }
                out.append(json(entry.getKey().toString())).append(": ").append(json(entry.getValue()));
            }
            return out.append("}").toString();
        }
        if (value instanceof String) {
            return "\"" + ((String) value).replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
        }
        if (value instanceof Double && !Double.isFinite((Double) value)) {
            return "null";
        }
        return String.valueOf(value);
    }
}
