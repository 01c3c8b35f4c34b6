package jetstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/natsserver"
	"github.com/zkherald/herald/internal/testtls"
	hjs "github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
	"github.com/zkherald/herald/sinks/sinktest"
)

func TestConfigValidate(t *testing.T) {
	conn := natssink.Options{URL: "nats://127.0.0.1:4222"}
	for _, c := range []struct {
		name string
		cfg  hjs.Config
		want error
		says string
	}{
		{"no url", hjs.Config{}, natssink.ErrConfig, "no NATS URL"},
		{"bad stream", hjs.Config{Conn: conn, Stream: "a.b"}, hjs.ErrConfig, "stream name"},
		{"bad bucket", hjs.Config{Conn: conn, Bucket: "a b"}, hjs.ErrConfig, "bucket name"},
		{"window over age", hjs.Config{Conn: conn, Duplicates: time.Hour, MaxAge: time.Minute}, hjs.ErrConfig, "longer than MaxAge"},
		{"replicas", hjs.Config{Conn: conn, Replicas: 7}, hjs.ErrConfig, "replicas"},
		{"history", hjs.Config{Conn: conn, History: 65}, hjs.ErrConfig, "history"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := hjs.New(c.cfg)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("got %v, want %v saying %q", err, c.want, c.says)
			}
		})
	}
	s, err := hjs.New(hjs.Config{Conn: conn, MaxAge: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Config().Duplicates; d != time.Minute {
		t.Fatalf("default duplicate window with MaxAge 1m: %s, want 1m", d)
	}
}

// TestCredentials: the JetStream sink logs in with the shared options, and
// a refusal names the URL, not the secret.
func TestCredentials(t *testing.T) {
	srv := natsserver.Start(t, natsserver.WithUser("bridge", "js-secret-1"))
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: srv.URL(), User: "bridge", Password: "js-secret-1"}})
	write(t, s, sinktest.Events(t.Name(), 1, 2)...)

	bad, err := hjs.New(hjs.Config{Conn: natssink.Options{URL: srv.URL(), User: "bridge", Password: "js-wrong-2"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = bad.Connect(ctx)
	if !errors.Is(err, natssink.ErrConnect) || strings.Contains(err.Error(), "js-wrong-2") || !strings.Contains(err.Error(), srv.URL()) {
		t.Fatalf("wrong password: %v", err)
	}
}

func TestTLS(t *testing.T) {
	files, err := testtls.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := natsserver.Start(t, natsserver.WithTLS(files, true))
	s := connectSink(t, hjs.Config{Conn: natssink.Options{URL: srv.URL(), TLS: natssink.TLSOptions{
		CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey}}})
	write(t, s, sinktest.Events(t.Name(), 1, 2)...)
}
