// Package addr checks server addresses as herald's clients will read them,
// before any connection is tried: an address that is not one would
// otherwise be retried as a server that does not answer.
package addr

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// HostPort says what is wrong with host[:port], if anything. A host alone
// is accepted: the client adds its default port.
func HostPort(hp string) error {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		if !strings.Contains(err.Error(), "missing port") {
			return fmt.Errorf("want host:port: %v", err)
		}
		host, port = strings.Trim(hp, "[]"), ""
	}
	if host == "" {
		return fmt.Errorf("no host: want host:port")
	}
	if port == "" {
		return nil
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("port %q is not a port number (1–65535)", port)
	}
	return nil
}

// NATS says what is wrong with one NATS server URL, if anything:
// [nats|tls|ws|wss://][user[:pass]@]host[:port], read as the NATS client
// reads it (an address without a scheme is nats://). Its errors never
// quote the URL: Go's parse error would, password and all.
func NATS(s string) error {
	if !strings.Contains(s, "://") {
		s = "nats://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		why := ""
		var uerr *url.Error
		if errors.As(err, &uerr) && !strings.Contains(s, "@") {
			why = " (" + uerr.Err.Error() + ")"
		}
		return fmt.Errorf("does not parse%s; check its host and port, and write a '%%' in a user or password as %%25", why)
	}
	switch u.Scheme {
	case "nats", "tls", "ws", "wss":
	default:
		return fmt.Errorf("scheme %q: want nats://host:port (or tls://, ws://, wss://)", u.Scheme)
	}
	pathOK := u.Path == "" || u.Path == "/" || u.Scheme == "ws" || u.Scheme == "wss" // a websocket may sit at a path
	if u.Host == "" || !pathOK || u.RawQuery != "" {
		return fmt.Errorf("want nats://host:port, e.g. nats://127.0.0.1:4222")
	}
	return HostPort(u.Host)
}
