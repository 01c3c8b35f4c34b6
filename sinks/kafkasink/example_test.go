package kafkasink_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkherald/herald/sinks/kafkasink"
)

// Following the current owner of one group from the compacted owners
// topic (needs a running Kafka, so it has no checked output).
func ExampleFollowOwners() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := kafkasink.Config{
		Brokers: []string{"localhost:9092"},
		SASL:    &kafkasink.SASL{Mechanism: kafkasink.ScramSHA512, User: "herald", Password: "from-a-secret-store"},
	}
	st, err := kafkasink.FollowOwners(ctx, cfg, "/jobs/nightly")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	for u := range st.C() {
		if o := u.Owner(); o != nil {
			fmt.Printf("%s is led by %s (term %d, ready %v)\n", u.Group, o.ID, u.Event.Term, u.Ready())
		} else {
			fmt.Printf("%s has no leader\n", u.Group)
		}
	}
	if err := st.Err(); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}
