// Command herald makes ZooKeeper leadership visible: it bridges elections
// and locks to NATS, Kafka and an audit log, runs one copy of a program at
// a time, and answers who leads now and who led when.
package main

import (
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == watchdogArg {
		os.Exit(runWatchdog(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == gateArg {
		os.Exit(runGate(os.Args[2:], os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
