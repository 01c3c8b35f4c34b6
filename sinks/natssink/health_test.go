package natssink_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/sinks/natssink"
	"github.com/zkherald/herald/sinks/sinktest"
)

// logBuf is a log the sink writes while the test reads it.
type logBuf = sinktest.LogBuf

// TestConnectWhileReconnecting: while its server is down the sink says it
// is not connected, and Connect fails instead of answering "connected"
// for a connection that cannot deliver; the lost connection is a WARN.
// Once the server is back both say connected again; a Close is no WARN.
func TestConnectWhileReconnecting(t *testing.T) {
	srv := natsserver.Start(t)
	var log logBuf
	s := connected(t, natssink.Options{URL: srv.URL(), ReconnectWait: 20 * time.Millisecond, MaxReconnectWait: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if !s.Connected() {
		t.Fatal("a sink just connected says it is not")
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; log:\n%s", what, log.String())
			}
			time.Sleep(10 * time.Millisecond) // polling interval, not ordering
		}
	}

	srv.Shutdown()
	waitUntil("not connected", func() bool { return !s.Connected() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err := s.Connect(ctx)
	cancel()
	if !errors.Is(err, natssink.ErrConnect) || !strings.Contains(err.Error(), "reconnecting") {
		t.Errorf("Connect with the server down: %v; want ErrConnect saying the connection is reconnecting", err)
	}
	waitUntil("the lost connection logged", func() bool { return strings.Contains(log.String(), "disconnected from NATS") })
	if !strings.Contains(log.String(), "level=WARN msg=\"disconnected from NATS") {
		t.Errorf("the lost connection is not a WARN:\n%s", log.String())
	}

	srv.Restart(t)
	waitUntil("connected again", s.Connected)
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Connect(ctx); err != nil {
		t.Errorf("Connect once the server is back: %v", err)
	}

	before := strings.Count(log.String(), "level=WARN")
	_ = s.Close()
	if s.Connected() {
		t.Error("a closed sink says it is connected")
	}
	waitUntil("the close logged", func() bool { return strings.Contains(log.String(), "NATS connection closed") })
	if n := strings.Count(log.String(), "level=WARN"); n != before {
		t.Errorf("Close logged a WARN:\n%s", log.String())
	}
}
