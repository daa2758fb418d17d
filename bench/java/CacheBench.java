// The cache section's Java side: Curator's CuratorCache as a Java service runs it (no Python, no
// JPype), timed as the Python worker (bench/cache_worker.py) times pycurator's.
//
//   java -cp BUILD:CURATOR CacheBench HOSTS ROOT WRITES SESSION_MS
//
// Loads a cache of ROOT (made beforehand), prints how long start() took to initialized(), the
// heap the cache holds per node once loaded (used heap after a full GC, before and after), then
// WRITES times writes a node's data from a second client and times each write until the cache's
// listener hears it. One JSON line on stdout.

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CacheBench {
    static long usedHeap() {
        Runtime runtime = Runtime.getRuntime();
        for (int i = 0; i < 4; i++) {
            System.gc();
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return runtime.totalMemory() - runtime.freeMemory();
    }

    static CuratorFramework client(String hosts, int sessionMs) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
                hosts, sessionMs, 15000, new ExponentialBackoffRetry(100, 3));
        client.start();
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("not connected to " + hosts);
        }
        return client;
    }

    public static void main(String[] args) throws Exception {
        String hosts = args[0];
        String root = args[1];
        int writes = Integer.parseInt(args[2]);
        int sessionMs = Integer.parseInt(args[3]);
        CuratorFramework reader = client(hosts, sessionMs);
        CuratorFramework writer = client(hosts, sessionMs);
        List<String> children = writer.getChildren().forPath(root);
        String target = root + "/" + children.get(0);

        long before = usedHeap();
        CountDownLatch initialized = new CountDownLatch(1);
        SynchronousQueue<Long> heard = new SynchronousQueue<>();
        CuratorCache cache = CuratorCache.build(reader, root);
        cache.listenable().addListener(new CuratorCacheListener() {
            @Override
            public void event(Type type, org.apache.curator.framework.recipes.cache.ChildData oldData,
                    org.apache.curator.framework.recipes.cache.ChildData data) {
                if (type == Type.NODE_CHANGED && data.getPath().equals(target)) {
                    try {
                        heard.put(System.nanoTime());
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }

            @Override
            public void initialized() {
                initialized.countDown();
            }
        });
        long started = System.nanoTime();
        cache.start();
        if (!initialized.await(300, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the cache never initialized");
        }
        long loadNs = System.nanoTime() - started;
        int size = cache.size();
        long held = usedHeap() - before;

        List<Long> latencies = new ArrayList<>();
        for (int i = 0; i < writes; i++) {
            long sent = System.nanoTime();
            writer.setData().forPath(target, ("write " + i).getBytes());
            Long at = heard.poll(60, TimeUnit.SECONDS);
            if (at == null) {
                throw new IllegalStateException("a write was never heard");
            }
            latencies.add(at - sent);
        }
        Collections.sort(latencies);
        long median = latencies.isEmpty() ? 0 : latencies.get(latencies.size() / 2);
        long p99 = latencies.isEmpty() ? 0 : latencies.get(Math.min(latencies.size() - 1, latencies.size() * 99 / 100));
        cache.close();
        reader.close();
        writer.close();
        System.out.println("{\"load_s\": " + loadNs / 1e9 + ", \"size\": " + size
                + ", \"bytes_per_node\": " + (double) held / Math.max(1, size)
                + ", \"latency_median_ms\": " + median / 1e6 + ", \"latency_p99_ms\": " + p99 / 1e6 + "}");
    }
}
