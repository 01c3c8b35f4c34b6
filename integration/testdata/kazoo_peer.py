"""kazoo_peer runs Kazoo recipes for herald's integration tests, driven line
by line over stdin. Every participant has its own KazooClient, so its own
ZooKeeper session.

    join PATH ID     Election(PATH, ID).run(...) in a thread   -> "joined ID NODE", later "leader ID"
    leave ID         cancel or end the term, stop the client     -> "left ID"
    lock PATH ID     Lock(PATH, ID).acquire() in a thread        -> "joined ID NODE", later "locked ID"
    unlock ID        release, stop the client                    -> "unlocked ID"

The shared-group tests (shared_group_test.go) drive whole tenures and log
them with wall-clock times, NANOS being time.time_ns(). "acq" is printed only
after the recipe said we own, "rel" just before we give ownership back, so
the logged interval lies inside the real one:

    hold KIND PATH ID   KIND is lock (Lock(PATH, ID)), election
                        (Election(PATH, ID), leading inside its function)
                        or semaphore:N (Semaphore(PATH, ID, max_leases=N),
                        whose lease is an ephemeral PATH/<uuid hex> node);
                        a client of its own  -> "queued ID NANOS", later "acq ID NANOS"
    release ID          give it back, stop the client -> "rel ID NANOS", "released ID"
    drop ID             cancel and stop ID in any state, logging nothing
                        (a test cleaning up)  -> "dropped ID"
    lease PATH ID SECONDS
                        NonBlockingLease(PATH, SECONDS, identifier=ID) on a
                        client of its own, stopped after -> "leased ID NANOS"
                        or "notleased ID NANOS"
    loop KIND PATH ID MINMS MAXMS DURATIONMS
                        acquire, hold MINMS..MAXMS, release, again until
                        DURATIONMS passed -> "queued", "acq", "rel" lines, "done ID COUNT"

Errors are reported as "error ID message". Usage: kazoo_peer.py HOSTS TIMEOUT_S
"""

import datetime
import random
import sys
import threading
import time

from kazoo.client import KazooClient

hosts = sys.argv[1]
timeout = float(sys.argv[2])
out = threading.Lock()
peers = {}


def say(line):
    with out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Peer:
    def __init__(self, path, ident, election):
        self.ident = ident
        self.client = KazooClient(hosts=hosts, timeout=timeout)
        self.client.start(timeout=20)
        self.done = threading.Event()
        if election:
            self.recipe = self.client.Election(path, ident)
            self.lock = self.recipe.lock
        else:
            self.recipe = self.client.Lock(path, ident)
            self.lock = self.recipe
        self.election = election
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 20
        while self.lock.node is None and time.time() < deadline:
            time.sleep(0.005)
        if self.lock.node is None:
            raise RuntimeError("node not created in 20s")
        say("joined %s %s" % (ident, self.lock.node))

    def lead(self):
        say("leader %s" % self.ident)
        self.done.wait()

    def run(self):
        try:
            if self.election:
                self.recipe.run(self.lead)
            else:
                self.recipe.acquire()
                say("locked %s" % self.ident)
                self.done.wait()
                self.recipe.release()
        except Exception as e:  # reported, never silent
            say("error %s %r" % (self.ident, e))

    def stop(self):
        self.done.set()
        if self.election:
            self.recipe.cancel()
        self.thread.join(20)
        self.client.stop()
        self.client.close()


def nanos():
    return time.time_ns()


tenants = {}


class Tenant:
    """One participant of hold or loop: its own client and recipe."""

    def __init__(self, kind, path, ident):
        leases = 0
        if kind.startswith("semaphore:"):
            leases = int(kind.split(":", 1)[1])
        elif kind not in ("lock", "election"):
            raise ValueError("unknown kind %s; want lock, election or semaphore:N" % kind)
        if ident in tenants:
            raise ValueError("id %s already in use" % ident)
        self.ident = ident
        self.election = kind == "election"
        self.client = KazooClient(hosts=hosts, timeout=timeout)
        self.client.start(timeout=20)
        if self.election:
            self.recipe = self.client.Election(path, ident)
        elif leases:
            self.recipe = self.client.Semaphore(path, ident, max_leases=leases)
        else:
            self.recipe = self.client.Lock(path, ident)
        self.release_event = threading.Event()
        self.dropped = False
        self.thread = None
        tenants[ident] = self

    def start(self, target, *args):
        self.thread = threading.Thread(target=target, args=args, daemon=True)
        self.thread.start()

    def fail(self, e):
        if not self.dropped:
            say("error %s %r" % (self.ident, e))

    def close(self):
        try:
            self.client.stop()
            self.client.close()
        except Exception:  # closing after a failure: nothing to report
            pass

    # hold: one tenure, released on "release ID".
    def hold(self):
        try:
            say("queued %s %d" % (self.ident, nanos()))
            if self.election:
                self.recipe.run(self.lead)
                if not self.release_event.is_set():
                    raise RuntimeError("election ended without leading")
            else:
                self.recipe.acquire()
                self.lead()
                self.recipe.release()
            self.close()
            tenants.pop(self.ident, None)
            say("released %s" % self.ident)
        except Exception as e:
            self.fail(e)

    def lead(self):
        say("acq %s %d" % (self.ident, nanos()))
        self.release_event.wait()
        say("rel %s %d" % (self.ident, nanos()))

    # loop: tenure after tenure until the duration passed.
    def loop(self, min_ms, max_ms, duration_ms):
        end = time.monotonic() + duration_ms / 1000.0
        n = 0

        def term():
            say("acq %s %d" % (self.ident, nanos()))
            time.sleep(random.randint(min_ms, max_ms) / 1000.0)
            say("rel %s %d" % (self.ident, nanos()))

        try:
            while time.monotonic() < end and not self.dropped:
                say("queued %s %d" % (self.ident, nanos()))
                if self.election:
                    self.recipe.run(term)
                else:
                    self.recipe.acquire()
                    term()
                    self.recipe.release()
                n += 1
            self.close()
            tenants.pop(self.ident, None)
            say("done %s %d" % (self.ident, n))
        except Exception as e:
            self.fail(e)

    def drop(self):
        self.dropped = True
        self.recipe.cancel()
        self.release_event.set()
        if self.thread is not None:
            self.thread.join(10)
        self.close()


def lease(path, ident, seconds):
    """One NonBlockingLease attempt: the lease holds by its data alone."""
    client = KazooClient(hosts=hosts, timeout=timeout)
    client.start(timeout=20)
    try:
        got = client.NonBlockingLease(path, datetime.timedelta(seconds=seconds), identifier=ident)
        say("%s %s %d" % ("leased" if got else "notleased", ident, nanos()))
    finally:
        client.stop()
        client.close()


def command(f):
    """Runs one of the shared-group commands; False if f is not one."""
    if f[0] == "hold":
        t = Tenant(f[1], f[2], f[3])
        t.start(t.hold)
    elif f[0] == "release":
        tenants[f[1]].release_event.set()
    elif f[0] == "drop":
        t = tenants.pop(f[1], None)
        if t is not None:
            t.drop()
        say("dropped %s" % f[1])
    elif f[0] == "lease":
        lease(f[1], f[2], float(f[3]))
    elif f[0] == "loop":
        t = Tenant(f[1], f[2], f[3])
        t.start(t.loop, int(f[4]), int(f[5]), int(f[6]))
    else:
        return False
    return True


def main():
    say("ready")
    for line in sys.stdin:
        f = line.split()
        if not f:
            continue
        ident = f[3] if f[0] in ("hold", "loop") and len(f) > 3 else f[-1]
        if f[0] == "lease" and len(f) > 2:
            ident = f[2]
        try:
            if command(f):
                continue
            if f[0] in ("join", "lock"):
                peers[ident] = Peer(f[1], ident, f[0] == "join")
            elif f[0] in ("leave", "unlock"):
                peers.pop(ident).stop()
                say(("left %s" if f[0] == "leave" else "unlocked %s") % ident)
            else:
                say("error %s unknown command %s" % (ident, f[0]))
        except Exception as e:
            say("error %s %r" % (ident, e))


if __name__ == "__main__":
    main()
