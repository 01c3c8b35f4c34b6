package publish

import (
	"context"
	"errors"
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

// ErrReconnect, wrapped in a Write error, asks the pipeline to call Connect
// before retrying.
var ErrReconnect = errors.New("publish: sink needs to reconnect")
