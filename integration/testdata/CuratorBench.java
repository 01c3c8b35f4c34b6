// CuratorBench is the Curator side of BenchmarkLockHandoff
// (bench_curator_test.go): CLIENTS Curator 5.4 clients, each with a
// CuratorFramework and so a ZooKeeper session of its own, take and give back
// one InterProcessMutex in a loop, as the benchmark's herald and go-zookeeper
// clients do. The process lives for the whole benchmark and is driven over
// stdin, one command a line:
//
//	run PATH MILLIS   every client, in a thread of its own, acquires the
//	                  mutex on PATH and releases it at once, again and again
//	                  until MILLIS ms have passed; a waiter still queued then
//	                  gives up (acquire's timeout, which deletes its node)
//	                                        -> "cycles N NANOS" once every thread
//	                                           stopped: N acquire-release cycles
//	                                           completed in NANOS ns
//	quit              close the clients      -> "bye"
//
// It says "ready" once every client is connected, and "error MESSAGE" when
// a command fails. Usage: CuratorBench CONNECT SESSION_MS CLIENTS
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;

public class CuratorBench {
    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        int sessionMs = Integer.parseInt(args[1]);
        int n = Integer.parseInt(args[2]);
        CuratorFramework[] clients = new CuratorFramework[n];
        for (int i = 0; i < n; i++) {
            clients[i] = CuratorFrameworkFactory.builder()
                    .connectString(connect)
                    .sessionTimeoutMs(sessionMs)
                    .connectionTimeoutMs(15000)
                    .retryPolicy(new RetryOneTime(100))
                    .build();
            clients[i].start();
        }
        for (CuratorFramework c : clients) {
            if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
                say("error no ZooKeeper connection in 30s");
                System.exit(1);
            }
        }
        ExecutorService pool = Executors.newFixedThreadPool(n);
        // One mutex per client and lock path, kept across runs like the
        // Go sides' lock objects.
        Map<String, InterProcessMutex[]> mutexes = new HashMap<>();
        say("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split("\\s+");
            try {
                switch (f[0]) {
                    case "run": {
                        InterProcessMutex[] ms = mutexes.computeIfAbsent(f[1], p -> {
                            InterProcessMutex[] a = new InterProcessMutex[n];
                            for (int i = 0; i < n; i++) {
                                a[i] = new InterProcessMutex(clients[i], p);
                            }
                            return a;
                        });
                        long window = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(f[2]));
                        long start = System.nanoTime();
                        long deadline = start + window;
                        List<Future<Long>> done = new ArrayList<>();
                        for (InterProcessMutex m : ms) {
                            done.add(pool.submit(() -> loop(m, deadline)));
                        }
                        long cycles = 0;
                        for (Future<Long> d : done) {
                            cycles += d.get();
                        }
                        say("cycles " + cycles + " " + (System.nanoTime() - start));
                        break;
                    }
                    case "quit":
                        pool.shutdownNow();
                        for (CuratorFramework c : clients) {
                            c.close();
                        }
                        say("bye");
                        return;
                    default:
                        say("error unknown command " + line);
                }
            } catch (ExecutionException e) {
                say("error " + e.getCause());
            } catch (Exception e) {
                say("error " + e);
            }
        }
    }

    // loop acquires and releases m until deadline and returns the cycles it
    // completed. A cycle counts when its acquire succeeded before the
    // deadline.
    static long loop(InterProcessMutex m, long deadline) throws Exception {
        long cycles = 0;
        for (;;) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || !m.acquire(left, TimeUnit.NANOSECONDS)) {
                return cycles;
            }
            m.release();
            cycles++;
        }
    }
}
