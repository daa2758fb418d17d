/*
 * The Java side of the benchmark's "standalone" section: Curator's recipes contending on one
 * path, in a Java program of its own (no Python, no JPype), as a Java service runs them.
 *
 * Usage: java -cp BUILD:CURATOR_CLASSPATH Contender RECIPE MODE HOSTS SECONDS THREADS PATH WARMUP
 *        SESSION_MS
 *   RECIPE  mutex | rwlock (90% reads) | semaphore (2 leases) | semaphore-mutex
 *           | multilock (two mutexes under PATH, both taken and released each time)
 *           | latch (a LeaderLatch a time: started, awaited, closed)
 *           | leader (a LeaderSelector, auto-requeued, whose takeLeadership counts and returns)
 *           | atomic (a DistributedAtomicLong's increment, optimistic)
 *           | atomic-promoted (the same, promoted to the InterProcessMutex at PATH-lock)
 *   MODE    shared (one client for the threads) | per-thread (a client each)
 * It connects, makes a lock object (or a selector) per thread, prints "ready", waits for a line
 * on stdin, runs the threads for WARMUP seconds unmeasured (the JIT compiles Curator meanwhile)
 * and then SECONDS measured ones, and prints its counts as one JSON line, as the Python workers
 * (bench/contended.py's, bench/standalone.py's) do. A leader's operation is one term, counted
 * in takeLeadership when it falls in the measured window; each thread's selector is queued from
 * the start of the warmup to the end of the window.
 */

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.RetryPolicy;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

public final class Contender {
    /** Same as bench/contended.py: the read share and the semaphore's leases. */
    private static final double READ_SHARE = 0.9;

    private static final int MAX_LEASES = 2;
    /** The multi-lock's two mutexes, under the block's path (bench/standalone.py's MULTILOCK). */
    private static final List<String> MULTILOCK = Arrays.asList("first", "second");
    /** The recipe whose operations are a leader selector's terms. */
    private static final String LEADER = "leader";
    /** An acquire that takes longer than this counts as a timeout (bench/common.py's SOON). */
    private static final long ACQUIRE_WAIT_MS = 60_000;
    /**
     * An atomic increment's tries (bench/counters.py's TRIES, SLEEP_S, PROMOTED_TRIES):
     * optimistic, 101 tries 1 ms apart; promoted, one optimistic try then 11 under the lock.
     */
    private static final int ATOMIC_RETRIES = 100;

    private static final int ATOMIC_SLEEP_MS = 1;
    private static final int PROMOTED_RETRIES = 10;

    /** One operation: true when done, false when it timed out. */
    private interface Operation {
        boolean run(Counts counts) throws Exception;
    }

    private static final class Counts {
        long done;
        long timeouts;
        long reads;
        long writes;
    }

    /**
     * A thread's leader selector, requeued after every term: each term that starts within the
     * measured window is counted, and returns at once.
     */
    private static final class Terms extends LeaderSelectorListenerAdapter {
        private final LeaderSelector selector;
        private final long[] window;
        private final AtomicLong counted = new AtomicLong();

        Terms(CuratorFramework client, String path, long[] window) {
            this.window = window;
            selector = new LeaderSelector(client, path, this);
            selector.autoRequeue();
        }

        @Override
        public void takeLeadership(CuratorFramework client) {
            long now = System.nanoTime();
            if (now >= window[0] && now < window[1]) {
                counted.incrementAndGet();
            }
        }

        /** Queue until the end of the window, then leave; the terms counted go to counts. */
        void run(Counts counts) throws InterruptedException {
            selector.start();
            long left = window[1] - System.nanoTime();
            if (left > 0) {
                TimeUnit.NANOSECONDS.sleep(left);
            }
            selector.close();
            counts.done += counted.get();
        }
    }

    private Contender() {}

    private static Operation operation(String recipe, CuratorFramework client, String path, int seed) {
        switch (recipe) {
            case "mutex": {
                InterProcessMutex mutex = new InterProcessMutex(client, path);
                return counts -> {
                    if (!mutex.acquire(ACQUIRE_WAIT_MS, TimeUnit.MILLISECONDS)) {
                        return false;
                    }
                    mutex.release();
                    return true;
                };
            }
            case "semaphore": {
                InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, MAX_LEASES);
                return counts -> {
                    Lease lease = semaphore.acquire(ACQUIRE_WAIT_MS, TimeUnit.MILLISECONDS);
                    if (lease == null) {
                        return false;
                    }
                    lease.close();
                    return true;
                };
            }
            case "semaphore-mutex": {
                InterProcessSemaphoreMutex mutex = new InterProcessSemaphoreMutex(client, path);
                return counts -> {
                    if (!mutex.acquire(ACQUIRE_WAIT_MS, TimeUnit.MILLISECONDS)) {
                        return false;
                    }
                    mutex.release();
                    return true;
                };
            }
            case "multilock": {
                List<String> paths = new ArrayList<>();
                for (String name : MULTILOCK) {
                    paths.add(path + "/" + name);
                }
                InterProcessMultiLock both = new InterProcessMultiLock(client, paths);
                return counts -> {
                    if (!both.acquire(ACQUIRE_WAIT_MS, TimeUnit.MILLISECONDS)) {
                        return false;
                    }
                    both.release();
                    return true;
                };
            }
            case "latch":
                // a latch starts once: each operation is a latch of its own
                return counts -> {
                    LeaderLatch latch = new LeaderLatch(client, path);
                    latch.start();
                    try {
                        return latch.await(ACQUIRE_WAIT_MS, TimeUnit.MILLISECONDS);
                    } finally {
                        latch.close();
                    }
                };
            case "rwlock": {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
                Random chance = new Random(seed);
                return counts -> {
                    boolean read = chance.nextDouble() < READ_SHARE;
                    InterProcessMutex side = read ? rw.readLock() : rw.writeLock();
                    if (!side.acquire(ACQUIRE_WAIT_MS, TimeUnit.MILLISECONDS)) {
                        return false;
                    }
                    side.release();
                    if (read) {
                        counts.reads++;
                    } else {
                        counts.writes++;
                    }
                    return true;
                };
            }
            case "atomic": {
                RetryPolicy tries = new RetryNTimes(ATOMIC_RETRIES, ATOMIC_SLEEP_MS);
                DistributedAtomicLong counter = new DistributedAtomicLong(client, path, tries);
                return counts -> counter.increment().succeeded();
            }
            case "atomic-promoted": {
                PromotedToLock promoted = PromotedToLock.builder()
                        .lockPath(path + "-lock")
                        .timeout(ACQUIRE_WAIT_MS, TimeUnit.MILLISECONDS)
                        .retryPolicy(new RetryNTimes(PROMOTED_RETRIES, ATOMIC_SLEEP_MS))
                        .build();
                DistributedAtomicLong counter =
                        new DistributedAtomicLong(client, path, new RetryNTimes(0, 0), promoted);
                return counts -> counter.increment().succeeded();
            }
            default:
                throw new IllegalArgumentException("unknown recipe: " + recipe);
        }
    }

    private static CuratorFramework connect(String hosts, int sessionMs) throws InterruptedException {
        // as pycurator.testing.new_curator makes its clients for the JPype comparison
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10))
                .ensembleTracker(false)
                .build();
        client.start();
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("cannot connect to " + hosts);
        }
        return client;
    }

    /** The version of the Curator recipes on the classpath, or "unknown". */
    private static String curatorVersion() {
        String resource = "META-INF/maven/org.apache.curator/curator-recipes/pom.properties";
        try (InputStream stream = InterProcessMutex.class.getClassLoader().getResourceAsStream(resource)) {
            if (stream != null) {
                Properties properties = new Properties();
                properties.load(stream);
                return properties.getProperty("version", "unknown");
            }
        } catch (java.io.IOException ignored) {
            // the manifest below, then
        }
        String version = InterProcessMutex.class.getPackage().getImplementationVersion();
        return version == null ? "unknown" : version;
    }

    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            System.err.println("usage: Contender RECIPE MODE HOSTS SECONDS THREADS PATH WARMUP SESSION_MS");
            System.exit(2);
        }
        String recipe = args[0];
        String mode = args[1];
        String hosts = args[2];
        double seconds = Double.parseDouble(args[3]);
        int threads = Integer.parseInt(args[4]);
        String path = args[5];
        double warmup = Double.parseDouble(args[6]);
        int sessionMs = Integer.parseInt(args[7]);
        if (!mode.equals("shared") && !mode.equals("per-thread")) {
            throw new IllegalArgumentException("unknown mode: " + mode);
        }
        List<CuratorFramework> clients = new ArrayList<>();
        if (mode.equals("shared")) {
            clients.add(connect(hosts, sessionMs));
        } else {
            for (int i = 0; i < threads; i++) {
                clients.add(connect(hosts, sessionMs));
            }
        }
        long[] window = new long[2]; // measured from, until (System.nanoTime), set before start
        List<Operation> ops = new ArrayList<>();
        List<Terms> leaders = new ArrayList<>();
        List<Counts> counts = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            CuratorFramework client = clients.get(mode.equals("shared") ? 0 : i);
            if (recipe.equals(LEADER)) {
                leaders.add(new Terms(client, path, window));
            } else {
                ops.add(operation(recipe, client, path, i));
            }
            counts.add(new Counts());
        }
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        List<Throwable> errors = new ArrayList<>();
        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Operation op = leaders.isEmpty() ? ops.get(i) : null;
            Terms terms = leaders.isEmpty() ? null : leaders.get(i);
            Counts mine = counts.get(i);
            Thread worker = new Thread(() -> {
                Counts spare = new Counts();
                try {
                    start.await();
                    if (terms != null) {
                        terms.run(mine);
                        return;
                    }
                    long now;
                    while ((now = System.nanoTime()) < window[1]) {
                        Counts into = now >= window[0] ? mine : spare;
                        if (op.run(into)) {
                            into.done++;
                        } else {
                            into.timeouts++;
                        }
                    }
                } catch (Throwable error) {
                    synchronized (errors) {
                        errors.add(error);
                    }
                }
            });
            worker.setDaemon(true);
            workers.add(worker);
            worker.start();
        }
        System.out.println("ready");
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        window[0] = System.nanoTime() + (long) (warmup * 1e9);
        window[1] = window[0] + (long) (seconds * 1e9);
        start.await(); // publishes the window to the workers
        long toStart = window[0] - System.nanoTime();
        if (toStart > 0) {
            TimeUnit.NANOSECONDS.sleep(toStart);
        }
        long cpu = processCpuNanos();
        for (Thread worker : workers) {
            worker.join((long) ((seconds + 120) * 1000));
        }
        cpu = processCpuNanos() - cpu;
        for (CuratorFramework client : clients) {
            client.close();
        }
        if (!errors.isEmpty()) {
            errors.get(0).printStackTrace();
            System.exit(1);
        }
        long done = 0;
        long timeouts = 0;
        long reads = 0;
        long writes = 0;
        for (Counts c : counts) {
            done += c.done;
            timeouts += c.timeouts;
            reads += c.reads;
            writes += c.writes;
        }
        System.out.println(String.format(
                Locale.ROOT,
                "{\"operations\": %d, \"ops_per_s\": %.6f, \"timeouts\": %d, \"reads\": %d, \"writes\": %d,"
                        + " \"cpu_ms_per_op\": %.6f, \"curator\": \"%s\", \"java\": \"%s\"}",
                done,
                done / seconds,
                timeouts,
                reads,
                writes,
                done > 0 ? cpu / 1e6 / done : 0.0,
                curatorVersion(),
                System.getProperty("java.version")));
        System.out.flush();
    }
}
