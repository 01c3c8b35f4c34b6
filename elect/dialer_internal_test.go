package elect

import (
	"crypto/x509"
	"strings"
	"testing"
)

// serverCertAdvice sends each server-certificate failure to its fix: an
// expired certificate to the server (or the clock), a wrong name to --zk,
// an unknown authority to --zk-ca.
func TestServerCertAdvice(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{x509.CertificateInvalidError{Reason: x509.Expired}, "renew it on the server, or check this host's clock"},
		{x509.HostnameError{Host: "zk9"}, "does not name the address"},
		{x509.UnknownAuthorityError{}, "--zk-ca"},
	} {
		if got := serverCertAdvice(c.err); !strings.Contains(got, c.want) {
			t.Errorf("%T: %q; want %q", c.err, got, c.want)
		}
	}
}
