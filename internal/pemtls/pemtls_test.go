package pemtls

import (
	"strings"
	"testing"

	"github.com/zkherald/herald/internal/testtls"
)

// ClientCert refuses, saying why, a certificate a server would refuse
// with a terse alert: one that expired, or one not meant for client
// authentication (a server's); it takes a valid client certificate.
func TestClientCertRefusesWhatServersRefuse(t *testing.T) {
	f, err := testtls.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ClientCert(f.ClientCert, f.ClientKey); err != nil {
		t.Fatalf("a valid client certificate: %v", err)
	}
	for _, c := range []struct{ name, cert, key, want string }{
		{"expired", f.ExpiredClientCert, f.ExpiredClientKey, "expired at"},
		{"a server's", f.ServerCert, f.ServerKey, "not meant for client authentication"},
	} {
		if _, err := ClientCert(c.cert, c.key); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s certificate: %v; want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := ClientConfig("", f.ExpiredClientCert, f.ExpiredClientKey); err == nil || !strings.Contains(err.Error(), f.ExpiredClientCert) {
		t.Errorf("ClientConfig with an expired certificate: %v; want an error naming the file", err)
	}
}
