// Command zkrun starts a throwaway ZooKeeper (standalone or ensemble) on
// loopback with the installed Debian package, prints its connect string,
// and stops it (removing its data) on Ctrl-C. `make zk` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zkherald/herald/internal/zkserver"
)

func main() {
	nodes := flag.Int("nodes", 1, "1 for standalone, 3 (or 5) for an ensemble")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := zkserver.Start(ctx, zkserver.Config{Nodes: *nodes})
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkrun:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Printf("ZooKeeper (%d node(s)) serving at %s\nexport HERALD_ZK=%s\nCtrl-C stops it and removes its data.\n",
		*nodes, c.ConnectString(), c.ConnectString())
	<-ctx.Done()
}
