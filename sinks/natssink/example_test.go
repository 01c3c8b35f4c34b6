package natssink_test

import (
	"fmt"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/natssink"
)

// Subjects name the event type and the group, so a consumer subscribes to
// exactly what it needs: one group, one type, or everything.
func ExampleMsg() {
	e := publish.Event{
		Type: publish.LeaderElected, Group: "/jobs/nightly", Recipe: "election",
		Owner: &publish.Participant{ID: "worker-7", Node: "n_0000000003"}, Term: 42,
	}.WithID()
	m, err := natssink.Msg(e)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Subject)
	fmt.Println(m.Header["ce-type"][0], m.Header["ce-subject"][0], m.Header["ce-term"][0])
	// Output:
	// herald.leader_elected.jobs.nightly
	// leader.elected /jobs/nightly 42
}

func ExampleRedact() {
	fmt.Println(natssink.Redact("nats://bridge:hunter2@n1:4222,nats://s3cr3t-token@n2:4222,nats://n3:4222"))
	// Output:
	// nats://bridge:***@n1:4222,nats://***@n2:4222,nats://n3:4222
}
