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
// Errors are reported as "error ID message". Usage: CuratorPeer CONNECT SESSION_MS
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
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

    public static void main(String[] args) throws Exception {
        connect = args[0];
        sessionMs = Integer.parseInt(args[1]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        say("ready");
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            String id = f.length > 1 ? f[f.length - 1] : "";
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
