package natsserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/internal/natsserver"
)

// TestRestartKeepsJetStream: a stream created before Restart is there after
// it, on the same URL, with its messages.
func TestRestartKeepsJetStream(t *testing.T) {
	srv := natsserver.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	// A request sent while the client reconnects can go unanswered, so each
	// attempt gets its own short deadline.
	var info *jetstream.StreamInfo
	for info == nil || info.State.Msgs != 1 {
		actx, acancel := context.WithTimeout(ctx, time.Second)
		s, err := js.Stream(actx, "T")
		if err == nil {
			info, err = s.Info(actx)
		}
		acancel()
		if ctx.Err() != nil {
			t.Fatalf("stream not back with its message after restart: %v (info %+v)", err, info)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not ordering
	}
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := natsserver.Run(ctx, natsserver.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	cancel()
	srv.WaitForShutdown()
	if srv.Running() {
		t.Fatal("server still running after its context ended")
	}
}

func TestRunValidates(t *testing.T) {
	for _, c := range []natsserver.Config{{}, {StoreDir: "x", Port: 70000}, {StoreDir: "x", Host: "not a host"}} {
		if _, err := natsserver.Run(context.Background(), c); !errors.Is(err, natsserver.ErrConfig) {
			t.Errorf("Run(%+v) = %v, want ErrConfig", c, err)
		}
	}
}
