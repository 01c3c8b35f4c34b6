"""kazoo_peer runs Kazoo recipes for herald's integration tests, driven line
by line over stdin. Every participant has its own KazooClient, so its own
ZooKeeper session.

    join PATH ID     Election(PATH, ID).run(...) in a thread   -> "joined ID NODE", later "leader ID"
    leave ID         cancel or end the term, stop the client     -> "left ID"
    lock PATH ID     Lock(PATH, ID).acquire() in a thread        -> "joined ID NODE", later "locked ID"
    unlock ID        release, stop the client                    -> "unlocked ID"

Errors are reported as "error ID message". Usage: kazoo_peer.py HOSTS TIMEOUT_S
"""

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


def main():
    say("ready")
    for line in sys.stdin:
        f = line.split()
        if not f:
            continue
        ident = f[-1]
        try:
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
