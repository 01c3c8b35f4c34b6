package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// Config.Validate says what is wrong and what to do.
func ExampleConfig_Validate() {
	cfg := bridge.Config{Servers: []string{"zk1:2181"}}
	fmt.Println(cfg.Validate())

	cfg.Watch = []string{"jobs/nightly"}
	err := cfg.Validate()
	fmt.Println(err)
	fmt.Println(errors.Is(err, bridge.ErrConfig), errors.Is(err, elect.ErrBadPath))
	// Output:
	// bridge: bad configuration: nothing to observe: give at least one group to watch or one root to discover
	// bridge: bad configuration: watch "jobs/nightly": elect: invalid ZooKeeper path: "jobs/nightly" must start with '/'
	// true true
}

// A bridge from two groups to JetStream and an audit log, running as one
// of several hot copies, until SIGTERM.
func ExampleNew() {
	js, err := jetstream.New(jetstream.Config{Conn: natssink.Options{URL: "nats://127.0.0.1:4222"}})
	if err != nil {
		panic(err)
	}
	log, err := audit.New("/var/lib/herald/audit.log")
	if err != nil {
		panic(err)
	}
	b, err := bridge.New(bridge.Config{
		Servers:  []string{"zk1:2181", "zk2:2181", "zk3:2181"},
		Watch:    []string{"/jobs/nightly", "/locks/db"},
		Sinks:    []publish.Sink{js, log},
		Lossless: []string{log.Name()},
		HAPath:   "/herald/bridges",
		HTTPAddr: ":9090",
		Logger:   slog.Default(),
	})
	if err != nil {
		panic(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := b.Run(ctx); err != nil {
		slog.Error("bridge", "err", err)
	}
}
