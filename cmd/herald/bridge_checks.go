package main

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// checkSinkFlags refuses, while the flags are read, sink settings no
// server could take: an address that is not one (it would be retried as a
// server that does not answer until --connect-timeout, then read as
// unreachable), or an --ha-replay longer than the stream's duplicate
// window.
func (f *bridgeFlags) checkSinkFlags() error {
	for _, u := range splitList(f.nats) {
		if err := checkNATSURL(u); err != nil {
			// Never the URL as given, nor Go's parse error, which quotes
			// it: either may hold a password.
			return usageErr("--nats %q: %v", natssink.Redact(u), err)
		}
	}
	for _, b := range splitList(f.kafka) {
		if err := checkHostPort(b); err != nil {
			return usageErr("--kafka %q: %v", b, err)
		}
	}
	jetStream := f.natsMode == "jetstream" && (f.nats != "" || f.kafka == "")
	window := f.natsDuplicates
	if window == 0 {
		window = jetstream.DefaultDuplicates
	}
	if f.ha != "" && jetStream && f.haReplay > window {
		return usageErr("--ha-replay %v is longer than the stream's duplicate window (--nats-duplicates %v): a standby taking over would store again, as new, "+
			"the events it held that are older than the window; give --ha-replay %v or less, or --nats-duplicates %v", f.haReplay, window, window, f.haReplay)
	}
	return nil
}

// checkNATSURL says what is wrong with a NATS server URL, if anything:
// [nats|tls|ws|wss://][user[:pass]@]host[:port], as the client reads it.
func checkNATSURL(s string) error {
	if !strings.Contains(s, "://") {
		s = "nats://" + s // the client's default scheme
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("does not parse; check its host and port, and write a '%%' in a user or password as %%25")
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
	return checkHostPort(u.Host)
}

// checkHostPort says what is wrong with host[:port], if anything (a host
// alone takes the client's default port).
func checkHostPort(hp string) error {
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
		return nil // the client's default port
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("port %q is not a port number (1–65535)", port)
	}
	return nil
}
