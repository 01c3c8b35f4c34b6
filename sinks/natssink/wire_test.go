package natssink_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

// TestWireHeaders reads a published event the way a consumer in another
// language would: over a raw TCP connection speaking the NATS text
// protocol, with no Go client in between. The headers must be the
// CloudEvents NATS binding's names, lower case, with the event's values.
func TestWireHeaders(t *testing.T) {
	host := strings.TrimPrefix(url, "nats://")
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "INFO ") {
		t.Fatalf("server greeting %q: %v", line, err)
	}
	e := sinktest.Events(t.Name(), 1, 1)[0]
	e.Recipe = elect.RecipeLock
	e.Type = publish.LockAcquired
	e = e.WithID()
	subj, _ := publish.Subject(e.Type, e.Group)
	fmt.Fprintf(conn, "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":false,\"protocol\":1}\r\nSUB %s 1\r\nPING\r\n", subj)
	if line, err := nextLine(conn, r); err != nil || line != "PONG\r\n" {
		t.Fatalf("want PONG after SUB, got %q: %v", line, err)
	}

	s := connected(t, natssinkOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Write(ctx, []publish.Event{e}); err != nil {
		t.Fatal(err)
	}

	// HMSG <subject> <sid> <header bytes> <total bytes>, after any
	// asynchronous INFO or PING the server sends.
	line, err := nextLine(conn, r)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "HMSG" || f[1] != subj {
		t.Fatalf("want HMSG on %s, got %q", subj, line)
	}
	hlen, _ := strconv.Atoi(f[3])
	total, _ := strconv.Atoi(f[4])
	buf := make([]byte, total+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	raw := string(buf[:hlen])
	if !strings.HasPrefix(raw, "NATS/1.0\r\n") {
		t.Fatalf("header block starts %q", raw)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(raw[len("NATS/1.0\r\n"):], "\r\n\r\n"), "\r\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("header line %q has no ':'", l)
		}
		got[k] = strings.TrimSpace(v)
	}
	want := map[string]string{
		"ce-specversion": "1.0",
		"ce-id":          e.ID,
		"ce-source":      e.Source,
		"ce-type":        "lock.acquired",
		"ce-subject":     e.Group,
		"ce-time":        e.Time.UTC().Format(time.RFC3339Nano),
		"content-type":   "application/json",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("header %q = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	for k := range got {
		if k != strings.ToLower(k) {
			t.Errorf("header %q is not lower case; the CloudEvents NATS binding names are", k)
		}
	}
	if body := string(buf[hlen:total]); !strings.Contains(body, `"id":"`+e.ID+`"`) {
		t.Fatalf("body %s does not carry the event", body)
	}

}

// nextLine reads the next protocol line that is not an asynchronous INFO,
// answering the server's PINGs on the way.
func nextLine(conn net.Conn, r *bufio.Reader) (string, error) {
	for {
		line, err := r.ReadString('\n')
		switch {
		case err != nil:
			return line, err
		case line == "PING\r\n":
			fmt.Fprint(conn, "PONG\r\n")
		case !strings.HasPrefix(line, "INFO "):
			return line, nil
		}
	}
}
