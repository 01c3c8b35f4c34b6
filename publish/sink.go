package publish

import (
	"context"
	"errors"
	"fmt"
	"github.com/zkherald/herald/elect"
)

// Sink is where events go. publish owns this interface; the packages under
// sinks/ implement it.
//
// Write receives events of possibly many groups, in order per group, and
// either stores all of them or returns an error. An error means the batch is
// retried later, whole, after Connect succeeds again: Write must be idempotent
// for events it already stored (every event carries a deterministic id).
type Sink interface {
	// Name is a short label for logs and metrics ("nats", "jetstream", ...).
	Name() string
	// Connect establishes (or re-establishes) whatever the sink needs. It is
	// called before the first Write and after a Write that returned an error
	// wrapping ErrReconnect. The pipeline also calls it again after any
	// other failed Write or Connect, so it must be safe to call on a sink
	// that is already connected (release the old connection, or keep it).
	Connect(ctx context.Context) error
	// Write stores a batch.
	Write(ctx context.Context, batch []Event) error
	// Close releases the sink's resources.
	Close() error
}

// ConnState is a Sink whose connection outlives a failure and comes back
// by itself (a NATS connection reconnects on its own, and Connect has
// nothing to do meanwhile). Connected says whether it is connected right
// now: the pipeline counts a sink that says no as not healthy, also while
// it has nothing to write.
type ConnState interface {
	Connected() bool
}

// ErrReconnect, wrapped in a Write error, asks the pipeline to call Connect
// before retrying.
var ErrReconnect = errors.New("publish: sink needs to reconnect")

// RejectedError, returned by Write, says that the sink can never store
// batch[Index] (the server refuses it for good, e.g. it is larger than the
// server's maximum payload) and that every event before it was stored.
// The pipeline drops that one event from that sink only, counts it
// (herald_rejected_events_total, Stats' Rejected and LastError name its
// id), and goes on with the rest: retrying it forever would hold up every
// later event of the sink. Other sinks, the audit log among them, still
// get it.
type RejectedError struct {
	Index int
	Err   error
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("publish: the sink refuses event %d of the batch for good: %v", e.Index, e.Err)
}

func (e *RejectedError) Unwrap() error { return e.Err }

// LastReport is the last thing a sink holds about one group: its owner
// node ("" for none) as of Zxid, and what the group held (its recipe, ""
// when the sink does not say).
type LastReport struct {
	Owner string
	// OwnerID is the owner's ID, "" without an owner or when not kept:
	// a single-node leader's node rewritten since tells by it a new
	// owner from the reported one's data set back (elect.ReportOwnerID).
	OwnerID string
	// Term is the owner's term (its node's czxid), 0 without an owner
	// or where the sink does not keep it.
	Term   int64
	Zxid   int64
	Recipe elect.Recipe
	// Epoch is the system's leadership epoch the report carried
	// (Event.Epoch: Kafka's controller epoch), 0 when unknown. With it,
	// a single-node leader's first snapshot after a restart counts the
	// elections since exactly, where the zxid alone says gap for any
	// other owner.
	Epoch int64
}

// Reporter is a sink that can say, once connected, what it last stored for
// each group. A bridge that starts reads it from every such sink, so that
// the first snapshot of a group says gap when an owner may have come and
// gone since that report, whichever bridge stored it: after a full
// outage, on a new host, or when a group moves to another shard.
type Reporter interface {
	LastReports(ctx context.Context) (map[string]LastReport, error)
}

// StateKeeper is a Sink that keeps, beside the events, a store of every
// group's current state (JetStream's owners bucket, Kafka's compacted
// owners topic). StateLost reports, once, that the sink found that store
// missing and made it again since the last call: someone deleted it while
// the sink ran, and with it the state of every group that has not changed
// since. A store made at the sink's first Connect is no loss (nothing was
// in it yet), and StateLost says false then.
//
// The pipeline asks after every Connect that succeeds. On a loss it
// writes the current state of every group it was given (see
// Pipeline.Observed) to that sink alone, as snapshot events without the
// gap flag: nothing was missed (the failed batch is retried as always),
// only the unchanged groups' state was lost with the store. They carry
// the ids a snapshot of the same state gets, so consumers of the sink's
// history drop them as duplicates.
type StateKeeper interface {
	StateLost() bool
}

// StoreChecker is a StateKeeper that can look whether its store of
// current state is still the one it wrote to, without writing: the
// pipeline asks it every WithStoreCheck interval while the sink has
// nothing to write. A bridge whose groups do not change writes nothing,
// and without the look a store deleted under it would stay empty while
// its heartbeats, written beside the store, keep its values looking
// fresh.
//
// StoreGone reports whether the store is missing, or was made again by
// someone else, since the sink last connected; the sink then counts the
// store lost (StateLost says so after the next Connect). A look that
// fails (the servers do not answer) reports false: the sink's writes and
// its next look find out.
type StoreChecker interface {
	StateKeeper
	StoreGone(ctx context.Context) bool
}

// Private is a Sink only this process writes, such as a local file. A
// pipeline whose caller stops publishing (Pause: an HA bridge deposed)
// still writes what it has queued there; to every other sink, which the
// active bridge writes now, it writes nothing more, so that nothing older
// lands after what the active bridge wrote.
type Private interface {
	Private() bool
}
