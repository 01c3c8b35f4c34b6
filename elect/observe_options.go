package elect

import (
	"fmt"
	"sync"
	"time"
)

// ObserveOption configures Observe.
type ObserveOption func(*observeOptions) error

type observeOptions struct {
	recipe Recipe
	rules  RecipeRules
	buffer int
	since  *View
	// after is what a previous observer last reported, when only that is
	// known (AfterOwner).
	after *View
	// reportEpoch is the epoch that report carried (ReportEpoch), nil
	// when it carried none.
	reportEpoch *int64
	// reportID is the ID of the owner that report named
	// (ReportOwnerID), "" when not known.
	reportID string
	// epochRecheck is how often ObserveSingle reads an epoch node between
	// changes (EpochRecheck).
	epochRecheck time.Duration
}

// DefaultEpochRecheck is how often ObserveSingle reads a leader's epoch
// node between changes, unless EpochRecheck says otherwise.
const DefaultEpochRecheck = 30 * time.Second

// EpochRecheck has ObserveSingle read the epoch node (SingleNode.EpochPath)
// of a leader once per d between changes; 0 never. No watch is set on that
// node, and ZooKeeper fires none for an ACL: an epoch node hidden by its
// ACL, deleted under the live leader, or back again, was learned only at
// the next change of the leader, which may be months away. The leader is
// then restated (a Snapshot of the same tenure) with its epoch, or a note
// saying why it is not known. Many checks with its Resync instead.
func EpochRecheck(d time.Duration) ObserveOption {
	return func(o *observeOptions) error {
		if d < 0 {
			return fmt.Errorf("elect: negative epoch recheck %v", d)
		}
		o.epochRecheck = d
		return nil
	}
}

// AfterOwner continues an observation of which only the last report is
// known: the owner node ("" for none) as of zxid. That is what a bridge
// restarted on the same audit log knows. The first Snapshot says Gap
// unless the same owner still holds or the group's children have not
// changed since zxid: nothing else can prove who owned in between.
func AfterOwner(node string, zxid int64) ObserveOption {
	return func(o *observeOptions) error {
		v := View{Exists: true, Pzxid: zxid, ownerOnly: true}
		if node != "" {
			v.Owner = &Participant{Node: node}
		}
		o.after = &v
		return nil
	}
}

// AfterReport is AfterOwner for a report that also says what the group
// held (its recipe): a group nothing tells about any more (an emptied
// lock of a client whose names do not say) keeps that recipe.
func AfterReport(node string, zxid int64, recipe Recipe) ObserveOption {
	return func(o *observeOptions) error {
		if err := AfterOwner(node, zxid)(o); err != nil {
			return err
		}
		if recipe.Known() {
			o.after.Recipe = recipe
		}
		return nil
	}
}

// ReportEpoch adds to AfterOwner or AfterReport the system's leadership
// epoch the last report carried (publish.Event.Epoch), for a single-node
// leader with an EpochPath (Kafka's /controller_epoch). The first Snapshot
// then counts the elections since that report by the epoch, as a running
// observer does: one election that brought the owner it names is no gap,
// although the parent's children changed. Without it, or when the epoch
// cannot be read now, any other owner since the report's zxid is a gap.
// Observers of groups, and single-node leaders without an EpochPath,
// ignore it.
func ReportEpoch(epoch int64) ObserveOption {
	return func(o *observeOptions) error {
		if epoch < 0 {
			return fmt.Errorf("elect: negative epoch %d", epoch)
		}
		o.reportEpoch = &epoch
		return nil
	}
}

// ReportOwnerID is the ID of the owner the report AfterOwner or
// AfterReport continues from named. A single-node leader whose ephemeral
// node was written after it was made (by someone else than its system)
// then tells a rewrite since the report that names another owner, a new
// owner to the observer that saw it, from one that restored the reported
// owner's data. Without it the node is taken for the reported owner's
// tenure. Observers of groups ignore it.
func ReportOwnerID(id string) ObserveOption {
	return func(o *observeOptions) error {
		o.reportID = id
		return nil
	}
}

// Since continues an earlier observation of the group (one that ended with
// its session, say): the first Snapshot is measured against v, the last
// view that observation had (Observer.Last), and says Gap when an owner may
// have come and gone in between. A single-node leader's view keeps its
// epoch, which then counts the elections in between exactly.
func Since(v View) ObserveOption {
	return func(o *observeOptions) error {
		o.since = &v
		return nil
	}
}

// AsRecipe says whether the group is an election or a lock (by default it
// is guessed from the node names: "lock" in them means a lock).
func AsRecipe(r Recipe) ObserveOption {
	return func(o *observeOptions) error {
		if !r.Known() {
			return fmt.Errorf("elect: unknown recipe %q (want election or lock)", r)
		}
		o.recipe = r
		return nil
	}
}

// Buffer sets the changes channel's buffer (default 64). The observer never
// drops a change: when the buffer is full it waits, and ZooKeeper's one-shot
// watch means the next listing catches up (reported with Gap when owners
// may have been missed).
func Buffer(n int) ObserveOption {
	return func(o *observeOptions) error {
		if n < 0 {
			return fmt.Errorf("elect: negative buffer %d", n)
		}
		o.buffer = n
		return nil
	}
}

// Observer streams the changes of one group.
type Observer struct {
	ch   chan Change
	mu   sync.Mutex
	err  error
	last *View
	done chan struct{}
}

// Last is the latest view the observer emitted changes for (false before
// the first). Give it to Since when observing the group again.
func (o *Observer) Last() (View, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		return View{}, false
	}
	return *o.last, true
}

// Changes is closed when the observer stops; Err says why.
func (o *Observer) Changes() <-chan Change { return o.ch }

// Err is nil while running, ctx.Err() after cancel, ErrSessionLost when the
// session expired (observe again on a new session).
func (o *Observer) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Wait blocks until the observer has stopped.
func (o *Observer) Wait() { <-o.done }
