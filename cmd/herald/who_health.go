package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
)

// health is what an operator asks of a group in an incident, read from
// the events a bridge published: how often the owner changed in the last
// hour (a flapping leadership), and, with no owner, since when. A snapshot
// that re-states the owner known before is no change; one that names
// another owner is (the change was seen only by a read afresh, as after a
// reconnect or READ given back). A snapshot that finds the group still
// without an owner, nothing missed, leaves since when as it was.
//
// atMost says the stretch may have begun earlier than ownerless: the bridge
// saw the loss late (publish.Event.NotBefore), or only in a snapshot. missed says changes may be
// missing from the count: an event of the last hour says gap (owners may
// have come and gone while no bridge observed the group).
func health(events []publish.Event, now time.Time) (changes int, ownerless *time.Time, atMost, missed bool) {
	seen := map[string]bool{}
	var lastLoss, lastGain time.Time
	late := false
	lastOwner := ""
	for _, e := range events {
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		if e.Gap && now.Sub(e.Time) <= time.Hour {
			missed = true
		}
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
			// Seen late, or only by a read afresh (a snapshot: after a
			// stall, a reconnect, a takeover), the loss came at or
			// before this moment.
			lastLoss, late = e.Time, e.NotBefore != nil || e.Snapshot
		}
	}
	if !lastLoss.IsZero() && lastLoss.After(lastGain) {
		ownerless, atMost = &lastLoss, late
	}
	return changes, ownerless, atMost, missed
}

// addHealth fills r's health from the group's history on the source r
// was read from; a history that cannot be read leaves it out, with a
// warning saying why (who's warnings are shown by default).
func (a *app) addHealth(ctx context.Context, sf *sourceFlags, r *whoReport) {
	events, err := a.historyEvents(ctx, sf, r.Group)
	if err != nil {
		a.log.Warn("could not read the group's history: its health (owner changes in the last hour, no owner since) is not shown", "group", r.Group, "err", err)
		return
	}
	if len(events) == 0 && r.Owner == nil {
		// A bridge publishes a group's state when it first observes it,
		// an empty group's too: none at all is most likely a wrong path.
		r.Notes = append(r.Notes, fmt.Sprintf("no event of %s is stored (none was published, or all were dropped): is the path right? ZooKeeper tells: herald who --zk HOSTS %s", r.Group, r.Group))
	}
	now := time.Now()
	n, since, atMost, missed := health(events, now)
	r.noEvents = len(events) == 0
	if r.noEvents && r.Since != nil && !r.SinceAtMost && now.Sub(*r.Since) <= time.Hour {
		// The owner's gain, dated by the owners view, is a change of the
		// hour that no stored event tells of any more.
		n = 1
	}
	r.ChangesLastHour = &n
	if from, ok := oldestEvent(events); ok && now.Sub(from) < time.Hour {
		r.EventsFrom = &from
	}
	// A bridge that is not confirming now may be missing the latest; with
	// no stored event (retention dropped them all) nothing is counted.
	r.ChangesLastHourAtLeast = missed || r.Stale || r.EventsFrom != nil || r.noEvents
	r.changesGap = missed
	if r.Owner == nil {
		r.OwnerlessSince, r.OwnerlessSinceAtMost = since, atMost
	}
	if r.Hazard == "" {
		r.Hazard = lastHazard(events)
	}
}

// oldestEvent is the time of the earliest of events (false for none).
func oldestEvent(events []publish.Event) (time.Time, bool) {
	var first time.Time
	for _, e := range events {
		if first.IsZero() || e.Time.Before(first) {
			first = e.Time
		}
	}
	return first, !first.IsZero()
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
		earlier := ""
		if r.OwnerlessSinceAtMost {
			earlier = " or earlier (the bridge saw the loss late, or only in a snapshot)"
		}
		return fmt.Errorf("%w; no owner since %s%s (%s ago)%s", err,
			r.OwnerlessSince.UTC().Format(time.RFC3339), earlier, time.Since(*r.OwnerlessSince).Round(time.Second), changesLastHour(*r))
	}
	return fmt.Errorf("%w;%s", err, strings.TrimPrefix(changesLastHour(*r), ","))
}

// changesLastHour says how often the owner changed in the last hour, for
// people: ", N owner changes in the last hour", a lower bound when the
// count may be missing some (see whoReport.ChangesLastHourAtLeast); ""
// when the history was not read.
func changesLastHour(r whoReport) string {
	switch {
	case r.ChangesLastHour == nil:
		return ""
	case !r.ChangesLastHourAtLeast:
		return fmt.Sprintf(", %d owner changes in the last hour", *r.ChangesLastHour)
	case r.Stale:
		return fmt.Sprintf(", at least %d owner changes in the last hour (no bridge confirms the group now: later changes are not counted)", *r.ChangesLastHour)
	case r.noEvents:
		return fmt.Sprintf(", at least %d owner changes in the last hour (no event of the group is stored: the stream's or topic's retention dropped them, or none was published)", *r.ChangesLastHour)
	case r.changesGap || r.EventsFrom == nil:
		return fmt.Sprintf(", at least %d owner changes in the last hour (a bridge marked a gap: owners may have come and gone unseen)", *r.ChangesLastHour)
	}
	return fmt.Sprintf(", at least %d owner changes in the last hour (the group's stored events begin at %s: none tell of changes before)",
		*r.ChangesLastHour, r.EventsFrom.UTC().Format(time.RFC3339))
}

// unreachable reports whether err means the server a reading command was
// to ask did not answer: ZooKeeper, NATS, or a Kafka broker; or NATS
// answered but its JetStream cannot serve now (jsDown).
func unreachable(err error) bool {
	var down *jsDown
	return err != nil && (noAnswer(err) || errors.As(err, &down))
}

// noAnswer reports whether err means the server did not answer at all.
func noAnswer(err error) bool {
	var op *net.OpError
	return errors.Is(err, elect.ErrUnreachable) || errors.Is(err, nats.ErrNoServers) || errors.Is(err, kafkasink.ErrUnreachable) || errors.As(err, &op)
}

// jsDown is a read of JetStream that failed because JetStream on the NATS
// servers cannot serve now, though they answer: a cluster that lost its
// quorum, or whose stream or bucket has no leader, says "temporarily
// unavailable" (503, err_code 10008) or leaves the request unanswered
// until it times out. JetStream not enabled at all is a setting of the
// server, not an outage, and is not one of these.
type jsDown struct{ err error }

func (e *jsDown) Error() string {
	return "JetStream on the NATS cluster is unavailable now (no quorum, or no leader for the stream or bucket; it serves again once enough of its servers are back): " + e.err.Error()
}

func (e *jsDown) Unwrap() error { return e.err }

// jsErr gives an error of reading JetStream (in ctx) as jsDown when it
// says JetStream cannot serve now; a server that did not answer at all, or
// a read the command itself ended, stays as it is.
func jsErr(ctx context.Context, err error) error {
	if err == nil || noAnswer(err) || ctx.Err() != nil {
		return err
	}
	var api *js.APIError
	down := errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, js.ErrNoHeartbeat) ||
		errors.Is(err, errStalled) || strings.Contains(err.Error(), "JetStream system temporarily unavailable")
	if errors.As(err, &api) {
		down = api.ErrorCode == js.ErrorCode(nats.JSErrCodeJetStreamNotAvailable)
	}
	if !down {
		return err
	}
	return &jsDown{err: err}
}

// errStalled: a read of the stream that made no progress for a while.
var errStalled = errors.New("JetStream delivered nothing")

// unreachableExit gives a reading command's error the exit status who
// gives it: exitUnreachable when a server did not answer, or its JetStream
// cannot serve now.
func unreachableExit(err error) error {
	if unreachable(err) {
		return &exitError{code: exitUnreachable, err: err}
	}
	return err
}

// streamErr is a failure (in ctx) to read the HERALD stream: a stream
// that does not exist is most likely one no bridge has made yet, which it
// says; JetStream that cannot serve now is jsDown.
func streamErr(ctx context.Context, err error) error {
	if errors.Is(err, js.ErrStreamNotFound) {
		return fmt.Errorf("read stream %s (is a bridge publishing to JetStream?): %w", jetstream.DefaultStream, err)
	}
	return jsErr(ctx, fmt.Errorf("read stream %s: %w", jetstream.DefaultStream, err))
}
