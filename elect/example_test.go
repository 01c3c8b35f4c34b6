package elect_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/zkserver"
)

// Elect a leader, write a fenced checkpoint, and hand over.
func ExampleElection_Campaign() {
	ctx := context.Background()
	zk, err := zkserver.Start(ctx, zkserver.Config{}) // a real ZooKeeper on loopback
	if err != nil {
		fmt.Println(err)
		return
	}
	defer zk.Close()

	s, err := elect.NewSession(ctx, zk.Addrs(), elect.WithSessionTimeout(4*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	e, _ := elect.NewElection(s, "/example/jobs/nightly", elect.CreateParents())

	leader, err := e.Campaign(ctx, "worker-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = leader.Acknowledge(ctx, "ready")
	_ = leader.Checkpoint(ctx, []byte("step 3"))
	who, _ := e.Leader(ctx)
	fmt.Println("leader:", who.ID, "term is the node's czxid:", who.Czxid == leader.Term())

	_ = leader.Resign(ctx)
	<-leader.Done()
	fmt.Println("after resign:", leader.Reason())
	cp, _ := elect.ReadCheckpoint(ctx, s, "/example/jobs/nightly")
	fmt.Printf("next leader resumes from %q\n", cp.Data)
	// Output:
	// leader: worker-1 term is the node's czxid: true
	// after resign: resigned
	// next leader resumes from "step 3"
}

// Names written by other clients are read too.
func ExampleParseName() {
	for _, n := range []string{
		"_c_3f2504e0-4f89-11d3-9a0c-0305e82c3301-latch-0000000001",
		"4b3c2d1e0f4b3c2d1e0f4b3c2d1e0f11__lock__0000000005",
		"n_-2147483648",
	} {
		info, _ := elect.ParseName(n)
		fmt.Println(info.Convention, info.Sequence)
	}
	// Output:
	// curator 1
	// kazoo 5
	// seed -2147483648
}
