package jetstream_test

import (
	"context"
	"fmt"
	"log"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	hjs "github.com/zkherald/herald/sinks/jetstream"
)

// A consumer learns who leads /jobs/nightly from NATS, not ZooKeeper: the
// current owner first, then every change, across NATS restarts.
func ExampleFollow() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := hjs.Follow(ctx, js, "/jobs/nightly")
	if err != nil {
		log.Fatal(err)
	}
	for u := range w.Updates() {
		if u.Owner == nil {
			fmt.Println(u.Group, "has no leader")
			continue
		}
		fmt.Println(u.Group, "is led by", u.Owner.Owner.ID, "term", u.Owner.Term, "ready", u.Owner.Ready)
	}
	log.Println("stopped:", w.Err())
}

// A consumer replays the history of one group and keeps following it;
// duplicates and stale events are already dropped.
func ExampleEvents() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	s, err := hjs.Events(context.Background(), js, "/jobs/nightly")
	if err != nil {
		log.Fatal(err)
	}
	for e := range s.Events() {
		fmt.Println(e.Time.Format("15:04:05"), e.Type, e.Term)
	}
}
