// CuratorPeer runs Apache Curator recipes for herald's integration tests,
// driven line by line over stdin. Every participant has its own Curator
// client, so its own ZooKeeper session.
//
//	join PATH ID     LeaderLatch(PATH, ID).start()        -> "joined ID NODE"
//	leave ID         close the latch and its client       -> "left ID"
//	lock PATH ID     InterProcessMutex(PATH).acquire() in a thread of its own,
//	                 the node's data is ID                -> "queued ID", later "locked ID"
//	unlock ID        release from that thread, close      -> "unlocked ID"
//	leader ID        wait until the latch leads            -> "leader ID"
//
// The shared-group tests (shared_group_test.go) drive whole tenures and
// log them with wall-clock times, NANOS being Unix nanoseconds from
// Instant.now() (microseconds on Linux). "acq" is printed only after the
// recipe said we own, "rel" just before we give ownership back, so the
// logged interval lies inside the real one:
//
//	hold KIND PATH ID  KIND is mutex (InterProcessMutex), semaphore-mutex
//	                   (InterProcessSemaphoreMutex: a mutex at PATH/locks,
//	                   then a lease under PATH/leases), latch (LeaderLatch,
//	                   which acts on NodeDeleted only) or selector
//	                   (LeaderSelector, id set with setId, leading while
//	                   inside takeLeadership); a client of its own
//	                                                      -> "queued ID NANOS", later "acq ID NANOS"
//	release ID         give it back, close the client    -> "rel ID NANOS", "released ID"
//	drop ID            close ID's recipe and client in any state, logging
//	                   nothing (a test cleaning up)       -> "dropped ID"
//	loop KIND PATH ID MINMS MAXMS DURATIONMS
//	                   acquire, hold MINMS..MAXMS, release, again until
//	                   DURATIONMS passed                  -> "queued", "acq", "rel" lines, "done ID COUNT"
//	                   KIND careful-mutex or careful-latch holds as Curator
//	                   advises across connection trouble (see careful)
//	revoke PATH NODE   Revoker.attemptRevoke on PATH/NODE (it writes the
//	                   node's data) from a client of its own -> "revoked NODE"
//
// Errors are reported as "error ID message". Usage: CuratorPeer CONNECT SESSION_MS
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryOneTime;

public class CuratorPeer {
    static String connect;
    static int sessionMs;
    static final Map<String, CuratorFramework> clients = new ConcurrentHashMap<>();
    static final Map<String, LeaderLatch> latches = new ConcurrentHashMap<>();
    static final Map<String, CountDownLatch> unlocks = new ConcurrentHashMap<>();

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static CuratorFramework client(String id) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(10000)
                .retryPolicy(new RetryOneTime(100))
                .defaultData(id.getBytes(StandardCharsets.UTF_8))
                .build();
        c.start();
        if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no ZooKeeper connection in 20s");
        }
        clients.put(id, c);
        return c;
    }

    static void join(String path, String id) throws Exception {
        LeaderLatch l = new LeaderLatch(client(id), path, id);
        latches.put(id, l);
        l.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (l.getOurPath() == null && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        String p = l.getOurPath();
        if (p == null) {
            throw new IllegalStateException("latch node not created in 20s");
        }
        say("joined " + id + " " + p.substring(p.lastIndexOf('/') + 1));
    }

    static void lock(String path, String id) throws Exception {
        CuratorFramework c = client(id);
        CountDownLatch release = new CountDownLatch(1);
        unlocks.put(id, release);
        Thread t = new Thread(() -> {
            try {
                InterProcessMutex m = new InterProcessMutex(c, path);
                m.acquire();
                say("locked " + id);
                release.await();
                m.release();
                c.close();
                clients.remove(id);
                say("unlocked " + id);
            } catch (Exception e) {
                say("error " + id + " " + e);
            }
        }, "lock-" + id);
        t.setDaemon(true);
        t.start();
        say("queued " + id);
    }


    // ---- tenures for the shared-group tests ----

    /** Wall-clock Unix nanoseconds (Instant.now(): microseconds on Linux). */
    static long nanos() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    /** One participant of hold or loop: its own client, its recipe. */
    static final class Tenant {
        final String id;
        final CuratorFramework client;
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicBoolean dropped = new AtomicBoolean();
        volatile Thread thread;
        volatile LeaderLatch latch;
        volatile LeaderSelector selector;

        Tenant(String id, CuratorFramework client) {
            this.id = id;
            this.client = client;
        }

        void fail(Exception e) {
            if (!dropped.get()) {
                say("error " + id + " " + e);
            }
        }
    }

    static final Map<String, Tenant> tenants = new ConcurrentHashMap<>();
    static volatile CuratorFramework revoker;
    static volatile boolean blind;

    static CuratorFramework newClient(String id) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(10000)
                .retryPolicy(new RetryOneTime(100))
                .defaultData(id.getBytes(StandardCharsets.UTF_8))
                .build();
        c.start();
        if (!c.blockUntilConnected(20, TimeUnit.SECONDS)) {
            c.close();
            throw new IllegalStateException("no ZooKeeper connection in 20s");
        }
        return c;
    }

    static Tenant tenant(String id) throws InterruptedException {
        if (tenants.containsKey(id)) {
            throw new IllegalStateException("id " + id + " already in use");
        }
        Tenant t = new Tenant(id, newClient(id));
        tenants.put(id, t);
        return t;
    }

    static void start(Tenant t, Runnable r) {
        Thread th = new Thread(r, "tenant-" + t.id);
        th.setDaemon(true);
        t.thread = th;
        th.start();
    }

    /** hold: one tenure, released on "release ID". */
    static void hold(String kind, String path, String id) throws Exception {
        Tenant t = tenant(id);
        start(t, () -> {
            try {
                switch (kind) {
                    case "mutex": {
                        InterProcessMutex m = new InterProcessMutex(t.client, path);
                        say("queued " + id + " " + nanos());
                        m.acquire();
                        say("acq " + id + " " + nanos());
                        t.release.await();
                        say("rel " + id + " " + nanos());
                        m.release();
                        break;
                    }
                    case "semaphore-mutex": {
                        InterProcessSemaphoreMutex m = new InterProcessSemaphoreMutex(t.client, path);
                        say("queued " + id + " " + nanos());
                        m.acquire();
                        say("acq " + id + " " + nanos());
                        t.release.await();
                        say("rel " + id + " " + nanos());
                        m.release();
                        break;
                    }
                    case "latch": {
                        LeaderLatch l = new LeaderLatch(t.client, path, id);
                        t.latch = l;
                        say("queued " + id + " " + nanos());
                        l.start();
                        l.await();
                        if (!l.hasLeadership()) {
                            throw new IllegalStateException("latch await returned without leadership");
                        }
                        say("acq " + id + " " + nanos());
                        t.release.await();
                        say("rel " + id + " " + nanos());
                        l.close();
                        break;
                    }
                    case "selector": {
                        CountDownLatch over = new CountDownLatch(1);
                        LeaderSelector s = new LeaderSelector(t.client, path, new LeaderSelectorListenerAdapter() {
                            @Override
                            public void takeLeadership(CuratorFramework c) throws Exception {
                                try {
                                    say("acq " + id + " " + nanos());
                                    t.release.await();
                                    say("rel " + id + " " + nanos());
                                } finally {
                                    over.countDown();
                                }
                            }
                        });
                        s.setId(id);
                        t.selector = s;
                        say("queued " + id + " " + nanos());
                        s.start();
                        over.await();
                        s.close();
                        break;
                    }
                    default:
                        throw new IllegalArgumentException("unknown kind " + kind + "; want mutex, semaphore-mutex, latch or selector");
                }
                t.client.close();
                tenants.remove(id);
                say("released " + id);
            } catch (Exception e) {
                t.fail(e);
            }
        });
    }

    static void release(String id) {
        Tenant t = tenants.get(id);
        if (t == null) {
            throw new IllegalStateException("no tenant " + id);
        }
        t.release.countDown();
    }

    static void drop(String id) {
        Tenant t = tenants.remove(id);
        if (t != null) {
            t.dropped.set(true);
            Thread th = t.thread;
            if (th != null) {
                th.interrupt();
            }
            try {
                if (t.latch != null) {
                    t.latch.close();
                }
            } catch (Exception ignored) {
            }
            try {
                if (t.selector != null) {
                    t.selector.close();
                }
            } catch (Exception ignored) {
            }
            t.client.close();
        }
        say("dropped " + id);
    }

    static void pauseRandom(int minMs, int maxMs) throws InterruptedException {
        Thread.sleep(ThreadLocalRandom.current().nextInt(minMs, maxMs + 1));
    }

    /** loop: tenure after tenure until the duration passed. */
    static void loop(String kind, String path, String id, int minMs, int maxMs, long durationMs) throws Exception {
        Tenant t = tenant(id);
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(durationMs);
        start(t, () -> {
            int n = 0;
            try {
                switch (kind) {
                    case "careful-mutex":
                    case "careful-latch":
                        n = careful(t, kind.substring("careful-".length()), path, minMs, maxMs, end);
                        break;
                    case "blind-mutex":
                    case "blind-latch":
                        blind = true;
                        n = careful(t, kind.substring("blind-".length()), path, minMs, maxMs, end);
                        break;
                    case "mutex": {
                        InterProcessMutex m = new InterProcessMutex(t.client, path);
                        while (System.nanoTime() < end) {
                            say("queued " + id + " " + nanos());
                            m.acquire();
                            say("acq " + id + " " + nanos());
                            pauseRandom(minMs, maxMs);
                            say("rel " + id + " " + nanos());
                            m.release();
                            n++;
                        }
                        break;
                    }
                    case "latch": {
                        while (System.nanoTime() < end) {
                            LeaderLatch l = new LeaderLatch(t.client, path, id);
                            t.latch = l;
                            say("queued " + id + " " + nanos());
                            l.start();
                            l.await();
                            say("acq " + id + " " + nanos());
                            pauseRandom(minMs, maxMs);
                            say("rel " + id + " " + nanos());
                            l.close();
                            n++;
                        }
                        break;
                    }
                    case "selector": {
                        // One selector that requeues itself after every term.
                        AtomicInteger terms = new AtomicInteger();
                        AtomicBoolean closing = new AtomicBoolean();
                        CountDownLatch finished = new CountDownLatch(1);
                        LeaderSelector s = new LeaderSelector(t.client, path, new LeaderSelectorListenerAdapter() {
                            @Override
                            public void takeLeadership(CuratorFramework c) throws Exception {
                                if (closing.get()) {
                                    return; // requeued once more before close(): hand it back at once
                                }
                                say("acq " + id + " " + nanos());
                                try {
                                    pauseRandom(minMs, maxMs);
                                } finally {
                                    say("rel " + id + " " + nanos());
                                }
                                terms.incrementAndGet();
                                if (System.nanoTime() >= end) {
                                    closing.set(true);
                                    finished.countDown();
                                } else {
                                    say("queued " + id + " " + nanos());
                                }
                            }
                        });
                        s.setId(id);
                        s.autoRequeue();
                        t.selector = s;
                        say("queued " + id + " " + nanos());
                        s.start();
                        finished.await();
                        s.close();
                        n = terms.get();
                        break;
                    }
                    default:
                        throw new IllegalArgumentException("unknown kind " + kind + "; want mutex, semaphore-mutex, latch or selector");
                }
                t.client.close();
                tenants.remove(id);
                say("done " + id + " " + n);
            } catch (Exception e) {
                t.fail(e);
            }
        });
    }

    /**
     * careful: loop's tenures held the way Curator's documentation asks of
     * a lock or latch that must stay exclusive through connection trouble:
     * a ConnectionStateListener ends the tenure ("rel") at SUSPENDED or
     * LOST, since the session may then expire and someone else own, and
     * a tenure the connection ended, or any failure, starts over on a new
     * client (the old session closes, or expires where it cannot). One
     * tenure in ten is held 2-5 s instead of MINMS..MAXMS.
     */
    static int careful(Tenant t, String kind, String path, int minMs, int maxMs, long end) throws InterruptedException {
        int n = 0;
        CuratorFramework c = t.client;
        while (System.nanoTime() < end && !t.dropped.get()) {
            if (c != null) {
                try {
                    n += carefulOn(c, t.id, kind, path, minMs, maxMs, end);
                } catch (InterruptedException e) {
                    throw e;
                } catch (Exception e) {
                    // connection trouble: a new client below
                }
                c.close();
                c = null;
            }
            if (System.nanoTime() < end && !t.dropped.get()) {
                try {
                    c = newClient(t.id);
                } catch (IllegalStateException e) {
                    Thread.sleep(100); // no quorum yet
                }
            }
        }
        if (c != null) {
            c.close();
        }
        return n;
    }

    /** carefulOn runs tenures on c until the end or the first trouble. */
    static int carefulOn(CuratorFramework c, String id, String kind, String path, int minMs, int maxMs, long end) throws Exception {
        Object mu = new Object();
        int[] epoch = {0};
        boolean[] holding = {false};
        c.getConnectionStateListenable().addListener((cl, st) -> {
            say("state " + id + " " + st + " " + nanos());
            if (!blind && (st == ConnectionState.SUSPENDED || st == ConnectionState.LOST)) {
                synchronized (mu) {
                    epoch[0]++;
                    if (holding[0]) {
                        holding[0] = false;
                        say("rel " + id + " " + nanos());
                    }
                }
            }
        });
        InterProcessMutex m = kind.equals("mutex") ? new InterProcessMutex(c, path) : null;
        int n = 0;
        while (System.nanoTime() < end) {
            int e0;
            synchronized (mu) {
                e0 = epoch[0];
            }
            if (!blind && !c.getZookeeperClient().isConnected()) {
                throw new IllegalStateException("not connected");
            }
            long waitMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime()) + 5000);
            say("queued " + id + " " + nanos());
            LeaderLatch l = null;
            boolean got;
            if (m != null) {
                got = m.acquire(waitMs, TimeUnit.MILLISECONDS);
            } else {
                l = new LeaderLatch(c, path, id);
                l.start();
                got = l.await(waitMs, TimeUnit.MILLISECONDS);
            }
            if (!got) {
                throw new IllegalStateException("not owning by the end");
            }
            boolean ours;
            synchronized (mu) {
                ours = epoch[0] == e0 && (l == null || l.hasLeadership());
                if (ours) {
                    holding[0] = true;
                    say("acq " + id + " " + nanos());
                }
            }
            if (ours) {
                // One tenure in ten outlasts a session timeout, so that
                // faults find owners in the middle of their tenure.
                long ms = ThreadLocalRandom.current().nextInt(10) == 0
                        ? ThreadLocalRandom.current().nextInt(2000, 5001)
                        : ThreadLocalRandom.current().nextInt(minMs, maxMs + 1);
                long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
                while (System.nanoTime() < until) {
                    synchronized (mu) {
                        if (!holding[0]) {
                            break; // the connection ended it
                        }
                    }
                    Thread.sleep(Math.min(10, Math.max(1, TimeUnit.NANOSECONDS.toMillis(until - System.nanoTime()))));
                }
            }
            boolean kept;
            synchronized (mu) {
                kept = holding[0];
                if (kept) {
                    holding[0] = false;
                    say("rel " + id + " " + nanos());
                }
            }
            if (m != null) {
                m.release();
            } else {
                l.close();
            }
            if (!kept) {
                throw new IllegalStateException("tenure ended by the connection");
            }
            n++;
        }
        return n;
    }

    static void revoke(String path, String node) throws Exception {
        if (revoker == null) {
            revoker = newClient("revoker");
        }
        Revoker.attemptRevoke(revoker, path + "/" + node);
        say("revoked " + node);
    }

    public static void main(String[] args) throws Exception {
        connect = args[0];
        sessionMs = Integer.parseInt(args[1]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        say("ready");
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            String id = f.length > 1 ? f[f.length - 1] : "";
            if ((f[0].equals("hold") || f[0].equals("loop")) && f.length > 3) {
                id = f[3];
            } else if (f[0].equals("revoke") && f.length > 2) {
                id = f[2];
            }
            try {
                switch (f[0]) {
                    case "join":
                        join(f[1], f[2]);
                        break;
                    case "leave":
                        latches.remove(id).close();
                        clients.remove(id).close();
                        say("left " + id);
                        break;
                    case "leader":
                        if (!latches.get(id).await(20, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("not leader after 20s");
                        }
                        say("leader " + id);
                        break;
                    case "lock":
                        lock(f[1], f[2]);
                        break;
                    case "unlock":
                        unlocks.remove(id).countDown();
                        break;
                    case "hold":
                        hold(f[1], f[2], f[3]);
                        break;
                    case "release":
                        release(f[1]);
                        break;
                    case "drop":
                        drop(f[1]);
                        break;
                    case "loop":
                        loop(f[1], f[2], f[3], Integer.parseInt(f[4]), Integer.parseInt(f[5]), Long.parseLong(f[6]));
                        break;
                    case "revoke":
                        revoke(f[1], f[2]);
                        break;
                    default:
                        say("error " + id + " unknown command " + f[0]);
                }
            } catch (Exception e) {
                say("error " + id + " " + e);
            }
        }
        System.exit(0);
    }
}
