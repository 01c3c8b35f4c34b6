package main

import (
	"github.com/zkherald/herald/internal/addr"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/natssink"
)

// checkSinkFlags refuses, while the flags are read, sink settings no
// server could take: an address that is not one (it would be retried as a
// server that does not answer until --connect-timeout, then read as
// unreachable), or an --ha-replay longer than the stream's duplicate
// window.
func (f *bridgeFlags) checkSinkFlags() error {
	for _, u := range splitList(f.nats) {
		if err := addr.NATS(u); err != nil {
			// Never the URL as given, nor Go's parse error, which quotes
			// it: either may hold a password.
			return usageErr("--nats %q: %v", natssink.Redact(u), err)
		}
	}
	for _, b := range splitList(f.kafka) {
		if err := addr.HostPort(b); err != nil {
			return usageErr("--kafka %q: %v", b, err)
		}
	}
	jetStream := f.natsMode == "jetstream" && (f.nats != "" || f.kafka == "")
	window := f.natsDuplicates
	if window == 0 {
		window = jetstream.DefaultDuplicates
	}
	if f.ha != "" && jetStream && f.haReplay > window {
		return usageErr("--ha-replay %v is longer than the stream's duplicate window (--nats-duplicates %v): a standby taking over would store again, as new, "+
			"the events it held that are older than the window; give --ha-replay %v or less, or --nats-duplicates %v", f.haReplay, window, window, f.haReplay)
	}
	return nil
}
