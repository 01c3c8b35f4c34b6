package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// health is what an operator asks of a group in an incident, read from
// the events a bridge published: how often the owner changed in the last
// hour (a flapping leadership), and, with no owner, since when. A snapshot
// that re-states the owner known before is no change; one that names
// another owner is (the change was seen only by a read afresh, as after a
// reconnect or READ given back). A snapshot that finds the group still
// without an owner, nothing missed, leaves since when as it was.
func health(events []publish.Event, now time.Time) (changes int, ownerless *time.Time) {
	seen := map[string]bool{}
	var lastLoss, lastGain time.Time
	lastOwner := ""
	for _, e := range events {
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		switch {
		case e.Type.Gains():
			node := ""
			if e.Owner != nil {
				node = e.Owner.Node
			}
			if (!e.Snapshot || lastOwner != "" && node != lastOwner) && now.Sub(e.Time) <= time.Hour {
				changes++
			}
			lastGain, lastOwner = e.Time, node
		case e.Type.Loses() && e.Owner == nil:
			if e.Snapshot && !e.Gap && !lastLoss.IsZero() && lastLoss.After(lastGain) {
				// The same ownerless stretch stated again (a reconnect, a
				// takeover, a restart) with nothing missed: it began at
				// the loss before.
				continue
			}
			lastLoss = e.Time
		}
	}
	if !lastLoss.IsZero() && lastLoss.After(lastGain) {
		ownerless = &lastLoss
	}
	return changes, ownerless
}

// addHealth fills r's health from the group's history on the source r
// was read from; a history that cannot be read leaves it out, said in the
// log.
func (a *app) addHealth(ctx context.Context, sf *sourceFlags, r *whoReport) {
	events, err := a.historyEvents(ctx, sf, nil, r.Group)
	if err != nil {
		a.log.Debug("no history for the group's health", "group", r.Group, "err", err)
		return
	}
	n, since := health(events, time.Now())
	r.ChangesLastHour = &n
	if r.Owner == nil {
		r.OwnerlessSince = since
	}
	if r.Hazard == "" {
		r.Hazard = lastHazard(events)
	}
}

// lastHazard is the hazard the group's latest event carried: whether, as
// the bridge last saw it, two of its clients may each believe they own
// (every event says it while it lasts, and the first after says "").
func lastHazard(events []publish.Event) string {
	if len(events) == 0 {
		return ""
	}
	return events[len(events)-1].Hazard
}

// withHealth adds the group's health to what who read from NATS or Kafka:
// to the report, or, when there is no owner (err), to the error.
func (a *app) withHealth(ctx context.Context, sf *sourceFlags, r *whoReport, err error) error {
	if r.Group == "" {
		return err
	}
	a.addHealth(ctx, sf, r)
	if err == nil || r.ChangesLastHour == nil {
		return err
	}
	if r.OwnerlessSince != nil {
		return fmt.Errorf("%w; no owner since %s (%s ago), %d owner changes in the last hour", err,
			r.OwnerlessSince.UTC().Format(time.RFC3339), time.Since(*r.OwnerlessSince).Round(time.Second), *r.ChangesLastHour)
	}
	return fmt.Errorf("%w; %d owner changes in the last hour", err, *r.ChangesLastHour)
}

// unreachable reports whether err means the server a reading command was
// to ask did not answer: ZooKeeper, NATS, or a Kafka broker.
func unreachable(err error) bool {
	var op *net.OpError
	return err != nil && (errors.Is(err, elect.ErrUnreachable) || errors.Is(err, nats.ErrNoServers) || errors.Is(err, kafkasink.ErrUnreachable) || errors.As(err, &op))
}

// unreachableExit gives a reading command's error the exit status who
// gives it: exitUnreachable when a server did not answer.
func unreachableExit(err error) error {
	if unreachable(err) {
		return &exitError{code: exitUnreachable, err: err}
	}
	return err
}
