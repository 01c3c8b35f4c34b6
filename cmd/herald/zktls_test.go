package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/testtls"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// Against a ZooKeeper that serves clients only with a certificate over its
// secureClientPort, lock, who, run, checkpoint and bridge all work with
// --zk-ca/--zk-cert/--zk-key; --zk-acl sets the ACL of the nodes herald
// creates; a wrong CA or a missing certificate fails with an error naming
// the flag to fix.
func TestZKTLSAndACL(t *testing.T) {
	t.Parallel() // waits on sessions and processes, not the CPU
	srv, files := zktest.ForTestTLS(t, true)
	tlsFl := []string{"--zk", strings.Join(srv.SecureAddrs(), ","), "--zk-ca", files.CA,
		"--zk-cert", files.ClientCert, "--zk-key", files.ClientKey, "--session-timeout", "2s", "--connect-timeout", "10s"}
	const acl = "ip:127.0.0.1:cdrwa,world:anyone:r"
	l := uniq(t)

	holder := start(t, nil, append(tlsFl, "--zk-acl", acl, "lock", "--lock", l, "--id", "tls-holder", "--", "sh", "-c", "echo node=$HERALD_NODE; exec sleep 60")...)
	holder.waitOutput(t, "node=", 20*time.Second)
	node := l + "/" + regexp.MustCompile(`node=(\S+)`).FindStringSubmatch(holder.out.String())[1]

	// The plain port shows the ACL --zk-acl asked for.
	conn, _, err := zk.Connect(srv.Addrs(), 5*time.Second, zk.WithLogger(quietZK{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got, _, err := conn.GetACL(node)
	if err != nil {
		t.Fatalf("ACL of %s: %v", node, err)
	}
	want := []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}, {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ACL of the holder's node: %+v; want %+v", got, want)
	}

	if out, stderr, code := heraldRun(t, nil, append(tlsFl, "who", l)...); code != 0 || !strings.Contains(out, "owner tls-holder") {
		t.Errorf("who over TLS: exit %d:\n%s%s", code, out, stderr)
	}

	g := uniq(t)
	if out, stderr, code := heraldRun(t, nil, append(tlsFl, "run", "--election", g, "--id", "tls-runner", "--", "sh", "-c", "echo ran-over-tls")...); code != 0 || !strings.Contains(out, "ran-over-tls") {
		t.Errorf("run over TLS: exit %d:\n%s%s", code, out, stderr)
	}
	if _, stderr, code := heraldRun(t, nil, append(tlsFl, "checkpoint", "get", "--election", g)...); code != 1 || !strings.Contains(stderr, "no checkpoint") {
		t.Errorf("checkpoint get over TLS with no checkpoint yet: exit %d, want the no-checkpoint answer: %s", code, stderr)
	}

	audit := filepath.Join(t.TempDir(), "audit.log")
	br := start(t, nil, append(tlsFl, "bridge", "--watch", l, "--audit", audit, "--nats", natsserver.Start(t).URL())...)
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(audit)
		if strings.Contains(string(b), "tls-holder") {
			break
		}
		if time.Now().After(deadline) || br.exited() {
			t.Fatalf("bridge over TLS never wrote the holder to its audit log:\n%s", br.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// An untrusted server certificate: the error names --zk-ca, at once.
	other := zktest.NewTLSFiles(t)
	bad := []string{"--zk", strings.Join(srv.SecureAddrs(), ","), "--zk-ca", other.CA,
		"--zk-cert", files.ClientCert, "--zk-key", files.ClientKey, "--connect-timeout", "10s"}
	began := time.Now()
	if _, stderr, code := heraldRun(t, nil, append(bad, "who", l)...); code != 69 || !strings.Contains(stderr, "--zk-ca") {
		t.Errorf("who with the wrong CA: exit %d, want 69 and an error naming --zk-ca: %s", code, stderr)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("who with the wrong CA took %v; a certificate error is not worth retrying", d)
	}
	// No client certificate where the server needs one.
	noCert := []string{"--zk", strings.Join(srv.SecureAddrs(), ","), "--zk-ca", files.CA, "--connect-timeout", "2s"}
	if _, stderr, code := heraldRun(t, nil, append(noCert, "who", l)...); code != 69 || !strings.Contains(stderr, "--zk-cert") {
		t.Errorf("who without a client certificate: exit %d, want 69 and an error naming --zk-cert: %s", code, stderr)
	}
	// Bad flags are usage errors that name the flag (--zk-acl where nodes
	// are created: who creates none and takes no ACL).
	put := []string{"checkpoint", "put", "--election", l, "x"}
	for _, c := range []struct {
		args []string
		want string
		cmd  []string
	}{
		{[]string{"--zk-acl", "world:anyone:x"}, "--zk-acl", put},
		{[]string{"--zk-acl", "ip:127.0.0.1:cdwa"}, "no one read", put},
		{[]string{"--zk-acl", "auth::cdrwa,world:anyone:r"}, "no identity", put},
		{[]string{"--zk-cert", files.ClientCert}, "--zk-key", []string{"who", l}},
		{[]string{"--zk-ca", os.DevNull}, "--zk-ca", []string{"who", l}},
	} {
		args := append(append([]string{"--zk", srv.ConnectString(), "--connect-timeout", "2s"}, c.args...), c.cmd...)
		if _, stderr, code := heraldRun(t, nil, args...); code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("herald %v: exit %d, want an error naming %q: %s", c.args, code, c.want, stderr)
		}
	}
}

// An expired --zk-cert is refused before any dial, saying when it expired.
func TestZKCertExpiredIsAUsageError(t *testing.T) {
	f, err := testtls.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := heraldRun(t, nil, "--zk", "127.0.0.1:1", "--zk-ca", f.CA, "--zk-cert", f.ExpiredClientCert, "--zk-key", f.ExpiredClientKey, "who", "/x")
	if code != exitUsage || !strings.Contains(stderr, "expired at") || !strings.Contains(stderr, "--zk-cert") {
		t.Fatalf("who with an expired --zk-cert: exit %d, want %d saying it expired:\n%s", code, exitUsage, stderr)
	}
}
