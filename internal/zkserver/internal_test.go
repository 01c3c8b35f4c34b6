package zkserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseWchs(t *testing.T) {
	n, err := parseWchs("2 connections watching 3 paths\nTotal watches:4\n")
	if err != nil || n != 4 {
		t.Fatalf("parseWchs = %d, %v; want 4", n, err)
	}
	if _, err := parseWchs("garbage"); err == nil {
		t.Fatal("parseWchs accepted an answer without a total")
	}
	if _, err := parseWchs("Total watches:x"); err == nil {
		t.Fatal("parseWchs accepted a non-numeric total")
	}
}

func TestParseMntr(t *testing.T) {
	m := parseMntr("zk_version\t3.8.0\nzk_server_state\tleader\nnoise\nzk_packets_received\t12\n")
	if m["zk_server_state"] != "leader" || m["zk_packets_received"] != "12" || len(m) != 3 {
		t.Fatalf("parseMntr = %v", m)
	}
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestFindClassPath(t *testing.T) {
	empty := t.TempDir()
	if _, err := findClassPath(env(nil), empty); !errors.Is(err, ErrZooKeeperNotFound) {
		t.Fatalf("no Debian jar: %v, want ErrZooKeeperNotFound", err)
	}
	if _, err := findClassPath(env(map[string]string{"ZOOKEEPER_HOME": empty}), "/nonexistent"); !errors.Is(err, ErrZooKeeperNotFound) {
		t.Fatalf("empty ZOOKEEPER_HOME: %v, want ErrZooKeeperNotFound", err)
	}

	home := t.TempDir()
	for _, p := range []string{"lib/zookeeper-3.8.4.jar", "lib/zookeeper-jute-3.8.4.jar", "lib/netty-handler.jar", "conf/logback.xml"} {
		mustWrite(t, filepath.Join(home, p))
	}
	cp, err := findClassPath(env(map[string]string{"ZOOKEEPER_HOME": home}), "/nonexistent")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(cp, string(os.PathListSeparator))
	if len(parts) != 4 || parts[0] != filepath.Join(home, "conf") {
		t.Fatalf("ZOOKEEPER_HOME class path %q: want conf first, then 3 jars", cp)
	}

	deb := t.TempDir()
	mustWrite(t, filepath.Join(deb, "zookeeper.jar"))
	mustWrite(t, filepath.Join(deb, "slf4j-simple.jar"))
	cp, err = findClassPath(env(nil), deb)
	want := filepath.Join(deb, "zookeeper.jar") + string(os.PathListSeparator) + filepath.Join(deb, "slf4j-simple.jar")
	if err != nil || cp != want {
		t.Fatalf("Debian class path = %q, %v; want %q", cp, err, want)
	}

	if cp, _ := findClassPath(env(map[string]string{"ZOOKEEPER_CLASSPATH": "/a.jar:/b.jar", "ZOOKEEPER_HOME": home}), deb); cp != "/a.jar:/b.jar" {
		t.Fatalf("ZOOKEEPER_CLASSPATH not used first: %q", cp)
	}
}

func TestFindJava(t *testing.T) {
	if _, err := findJava(env(map[string]string{"JAVA_HOME": t.TempDir()})); !errors.Is(err, ErrJavaNotFound) {
		t.Fatalf("JAVA_HOME without bin/java: %v, want ErrJavaNotFound", err)
	}
}

func TestZooCfg(t *testing.T) {
	c := Config{Nodes: 3}.withDefaults()
	members := []ports{{1, 2, 3, 10}, {4, 5, 6, 11}, {7, 8, 9, 12}}
	cfg := c.zooCfg(2, "/d", members)
	for _, want := range []string{"tickTime=200\n", "minSessionTimeout=400\n", "clientPort=4\n", "server.3=127.0.0.1:8:9\n", "4lw.commands.whitelist=*\n", "standaloneEnabled=false\n", "maxClientCnxns=0\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("zoo.cfg lacks %q:\n%s", want, cfg)
		}
	}
	solo := Config{TickTime: 100 * time.Millisecond}.withDefaults().zooCfg(1, "/d", members[:1])
	if strings.Contains(solo, "server.") || !strings.Contains(solo, "standaloneEnabled=true") {
		t.Errorf("standalone zoo.cfg:\n%s", solo)
	}
}

func mustWrite(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParseCons(t *testing.T) {
	m, err := parseCons(" /127.0.0.1:38064[0](queued=0,recved=1,sent=0)\n" +
		" /127.0.0.1:38048[1](queued=0,recved=2,sent=2,sid=0x100008f5b1e0004,lop=EXIS,est=1795326133503,to=60000,lcxid=0x1,lzxid=0x40cb,lresp=9399126,llat=0,minlat=0,avglat=0,maxlat=1)\n" +
		" /127.0.0.1:38050[1](queued=0,recved=17,sent=16,sid=0xff00008f5b1e0005,lop=PING)\n\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{0x100008f5b1e0004: 2, -0xffff70a4e1fffb: 17}
	if len(m) != len(want) {
		t.Fatalf("parseCons = %v, want %v", m, want)
	}
	for sid, n := range want {
		if m[sid] != n {
			t.Fatalf("parseCons[0x%x] = %d, want %d (all: %v)", sid, m[sid], n, m)
		}
	}
	if _, err := parseCons(" /1.2.3.4:5[1](recved=x,sid=0x1)"); err == nil {
		t.Fatal("parseCons accepted a non-numeric recved")
	}
}

// TestPortTakenIsStartedAgain: a server that died because a port it was
// given was taken between the pick and its bind (a test beside it took
// it: ZooKeeper's exit status 14 for a quorum port, "Address already in
// use" in its log for the others) is a start to try again; a server that
// died of anything else is not.
func TestPortTakenIsStartedAgain(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("%w: zk1 on 127.0.0.1:44953: exit status 14", ErrExited), true},
		{fmt.Errorf("%w: zk2: exit status 1\n...java.net.BindException: Address already in use", ErrExited), true},
		{fmt.Errorf("%w: zk1: exit status 3 (cannot access the data directory)", ErrExited), false},
		{errors.New("zkserver: free port: too many open files (Address already in use)"), false},
	} {
		if got := portTaken(c.err); got != c.want {
			t.Errorf("portTaken(%q) = %v, want %v", c.err, got, c.want)
		}
	}
}
