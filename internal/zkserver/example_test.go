package zkserver_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkherald/herald/internal/zkserver"
)

func ExampleConfig_Validate() {
	cfg := zkserver.Config{Nodes: 3, MinSessionTimeout: 10 * time.Second, MaxSessionTimeout: time.Second}
	err := cfg.Validate()
	fmt.Println(errors.Is(err, zkserver.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// zkserver: invalid config: MinSessionTimeout 10s is longer than MaxSessionTimeout 1s
}

func ExampleStart() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := zkserver.Start(ctx, zkserver.Config{Nodes: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	leader, err := c.Leader(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	leader.Kill() // crash the leader; the other two elect a new one
	next, err := c.Leader(ctx)
	fmt.Println(next != leader, err)
}
