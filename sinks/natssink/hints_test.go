package natssink_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/testtls"
	"github.com/zkherald/herald/sinks/natssink"
)

// wrongHint is the hint for a server that did not answer, which points at
// the URL when the cause is elsewhere.
const wrongHint = "listens at that address"

// TestConnectHintNamesTheCreds: a creds file whose seed is damaged failed
// with the hint to check that a server listens at the URL; it names the
// creds file.
func TestConnectHintNamesTheCreds(t *testing.T) {
	op, err := natsserver.NewOperator()
	if err != nil {
		t.Fatal(err)
	}
	srv := natsserver.Start(t, natsserver.WithOperator(op))
	creds, err := op.UserCreds(t.TempDir(), "bridge")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(creds)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "SUA") + 10 // inside the seed: its checksum no longer matches
	b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
	bad := filepath.Join(t.TempDir(), "bad.creds")
	if err := os.WriteFile(bad, b, 0o600); err != nil {
		t.Fatal(err)
	}
	err = dialAndWrite(t, natssink.Options{URL: srv.URL(), CredsFile: bad})
	refused(t, err, srv.URL(), "SUA", "--nats-creds")
	if strings.Contains(err.Error(), wrongHint) {
		t.Errorf("a damaged creds file blamed on the URL: %v", err)
	}
}

// TestConnectHintKeepsTheRefusalAmongSeveralURLs: with several URLs, one
// a live server that refuses the password, the others dead, the refusal
// was lost behind "no servers available"; it is what the error says.
func TestConnectHintKeepsTheRefusalAmongSeveralURLs(t *testing.T) {
	srv := natsserver.Start(t, natsserver.WithUser("u", "right-pw"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "nats://" + l.Addr().String()
	l.Close()
	for _, list := range []string{srv.URL() + "," + dead, dead + "," + srv.URL()} {
		for range 3 { // the client tries the servers in a random order
			err := dialAndWrite(t, natssink.Options{URL: list, User: "u", Password: "wrong-pw"})
			refused(t, err, list, "wrong-pw", "refused our credentials")
		}
	}
}

// TestConnectHintNamesTheClientCertificate: a server that wants a client
// certificate, asked without one, failed with the hint to check that a
// server listens at the URL; it names the certificate flags.
func TestConnectHintNamesTheClientCertificate(t *testing.T) {
	files, err := testtls.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := natsserver.Start(t, natsserver.WithTLS(files, true))
	err = dialAndWrite(t, natssink.Options{URL: srv.URL(), TLS: natssink.TLSOptions{CAFile: files.CA}})
	refused(t, err, srv.URL(), "\x00", "--nats-cert")
	if strings.Contains(err.Error(), wrongHint) {
		t.Errorf("a missing client certificate blamed on the URL: %v", err)
	}
}
