package elect_test

import (
	"context"
	"crypto/tls"
	"errors"
	"path"
	"slices"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// TestDigestDefaultACLLeavesOutTheCertificate: on servers that ask for a
// client certificate (ssl.clientAuth=need), a session with digest
// credentials has two identities, the digest one and the certificate's
// subject. The nodes it creates by default belong to the digest identity
// alone: a session holding the same certificate but no credentials reads
// them (but the checkpoint) and cannot write or delete any of them (the
// group, the member's node, the checkpoint).
func TestDigestDefaultACLLeavesOutTheCertificate(t *testing.T) {
	zk, f := zktest.ForTestTLS(t, true)
	pool := caPool(t, f.CA)
	cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	s, err := elect.NewSession(ctx, zk.SecureAddrs(), elect.WithTLS(cfg), elect.WithDigestAuth("herald:s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := append(gozk.DigestACL(gozk.PermAll, "herald", "s3cret"), gozk.WorldACL(gozk.PermRead)...)
	if got := s.DefaultACL(); !slices.Equal(got, want) {
		t.Errorf("default ACL with digest credentials and a client certificate: %s; want %s", elect.FormatACL(got), elect.FormatACL(want))
	}
	group := "/tls-digest/jobs/cp"
	e, err := elect.NewElection(s, group, elect.CreateParents())
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.Campaign(ctx, "holder")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Checkpoint(ctx, []byte("step=1")); err != nil {
		t.Fatal(err)
	}

	certOnly := tlsConn(t, zk.SecureAddrs(), cfg)
	checkpoint := path.Join(group, elect.CheckpointNode)
	nodes := []string{"/tls-digest", "/tls-digest/jobs", group, h.NodePath(), checkpoint}
	for _, p := range nodes {
		// Everyone reads (and so watches) herald's nodes but the
		// checkpoint, the leaders' own state, which nobody watches.
		if _, _, err := certOnly.Get(p); p == checkpoint && !errors.Is(err, gozk.ErrNoAuth) || p != checkpoint && err != nil {
			t.Errorf("the certificate alone reading %s: %v", p, err)
		}
		if _, err := certOnly.Set(p, []byte("overwritten"), -1); !errors.Is(err, gozk.ErrNoAuth) {
			t.Errorf("the certificate alone writing %s: %v; want ErrNoAuth", p, err)
		}
		acl, _, err := s.Conn().GetACL(p) // READ or ADMIN: the checkpoint's is the identity's to read
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range acl {
			if a.Scheme == "x509" {
				t.Errorf("ACL of %s names the certificate: %s", p, elect.FormatACL(acl))
			}
		}
	}
	for _, p := range []string{path.Join(group, elect.CheckpointNode), h.NodePath()} {
		if err := certOnly.Delete(p, -1); !errors.Is(err, gozk.ErrNoAuth) {
			t.Errorf("the certificate alone deleting %s: %v; want ErrNoAuth", p, err)
		}
	}
	if _, err := certOnly.Create(path.Join(group, "intruder"), nil, 0, gozk.WorldACL(gozk.PermAll)); !errors.Is(err, gozk.ErrNoAuth) {
		t.Errorf("the certificate alone creating in the group: %v; want ErrNoAuth", err)
	}
	cp, err := elect.ReadCheckpoint(ctx, s, group)
	if err != nil || string(cp.Data) != "step=1" {
		t.Errorf("checkpoint after the certificate's attempts: %q, %v; want step=1", cp.Data, err)
	}
	if !h.Held() {
		t.Error("the holder lost its leadership to the certificate's attempts")
	}
	if err := h.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
