package elect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// View is the state of a group at one moment.
type View struct {
	Group  string
	Recipe Recipe
	// Owner is the lowest node (nil when the queue is empty).
	Owner *Participant
	// Queue holds every queue node in order, owner first.
	Queue []Participant
	// Office is herald's office record, when the group has one.
	Office *Office
	// Cversion and Pzxid are the parent's child version and the zxid of the
	// last child change.
	Cversion int32
	Pzxid    int64
	// OfficeZxid is the mzxid of the office record.
	OfficeZxid int64
	// Exists is false when the group path does not exist.
	Exists bool
	// children are all child names, queue or not (to account for cversion).
	children []string
}

// Ready reports whether the owner acknowledged taking office.
func (v View) Ready() bool {
	return v.Owner != nil && v.Office != nil && v.Office.Ack != nil && v.Office.Ack.Node == v.Owner.Node
}

// ReadGroup reads a group once, without watches: the queue, the owner (its
// id from the node's data, its term and session from its stat) and herald's
// office record.
func ReadGroup(ctx context.Context, s *Session, group string) (View, error) {
	if err := ValidatePath(group); err != nil {
		return View{}, err
	}
	r := reader{conn: s.Conn(), group: group, everyID: true}
	v, err := r.read(ctx, false)
	if err == nil && !v.Exists {
		return v, fmt.Errorf("%w: %s", ErrNoParent, group)
	}
	return v, err
}

type reader struct {
	conn   *zk.Conn
	group  string
	recipe Recipe
	// cached owner details: the owner node's stat and data never change
	// while it exists, so they are read once per owner. With watch reads
	// the read also arms a data watch on the owner, ownerW: herald's
	// release writes the owner's node before deleting it, so the watch
	// firing as NodeDataChanged says the owner let go by its own call.
	owner  *Participant
	ownerW <-chan zk.Event
	// everyID reads every node's data and stat, not only the owner's (a
	// one-shot read for people; the observer reads only the owner's).
	everyID bool
}

type watches struct {
	children <-chan zk.Event
	office   <-chan zk.Event
	exists   <-chan zk.Event
	owner    <-chan zk.Event
}

// read lists the group; with watch it also arms a children watch (or an
// exists watch when the group is missing) and a data watch on the office.
func (r *reader) read(ctx context.Context, watch bool) (View, error) {
	v, _, err := r.readW(ctx, watch, true)
	return v, err
}

func (r *reader) readW(ctx context.Context, watch, armOffice bool) (View, watches, error) {
	return r.readGuess(ctx, watch, armOffice, "", false)
}

// readGuess is readW that also reads the node guess (the likely new owner)
// beside the listing, so a handover costs one round trip, not two.
func (r *reader) readGuess(ctx context.Context, watch, armOffice bool, guess string, officeNow bool) (View, watches, error) {
	var w watches
	// When the office is known to exist (its watch just fired), read it
	// beside the listing too.
	var early *officeRead
	if officeNow {
		early = r.startOffice(ctx, watch && armOffice)
	}
	var guessed chan struct{}
	var guessP Participant
	var guessW <-chan zk.Event
	var guessErr error
	if guess != "" {
		guessed = make(chan struct{})
		go func() {
			defer close(guessed)
			seq, _ := ParseSequence(guess)
			guessP, guessW, guessErr = r.details(ctx, entry{name: guess, seq: seq}, watch)
		}()
		defer func(done <-chan struct{}) { <-done }(guessed) // never outlive the read
	}
	for {
		type res struct {
			children []string
			stat     *zk.Stat
			ch       <-chan zk.Event
		}
		got, err := call(ctx, func() (res, error) {
			if watch {
				c, st, ch, err := r.conn.ChildrenW(r.group)
				return res{c, st, ch}, err
			}
			c, st, err := r.conn.Children(r.group)
			return res{c, st, nil}, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			if early != nil {
				<-early.done
				early = nil
			}
			v := View{Group: r.group, Recipe: r.recipe}
			if watch {
				ok, _, ch, err := existsW(ctx, r.conn, r.group)
				if err != nil {
					return v, w, err
				}
				if ok {
					continue // created meanwhile
				}
				w.exists = ch
			}
			return v, w, nil
		}
		if err != nil {
			if early != nil {
				<-early.done
			}
			return View{}, w, err
		}
		w.children = got.ch
		v := View{Group: r.group, Recipe: r.recipe, Exists: true, Cversion: got.stat.Cversion, Pzxid: got.stat.Pzxid, children: got.children}
		if v.Recipe == "" {
			// Guessed from the first names seen, then kept: a group that
			// empties stays the recipe it was.
			if g, ok := guessRecipe(got.children); ok {
				r.recipe = g
				v.Recipe = g
			} else {
				v.Recipe = RecipeElection
			}
		}
		// The office and the owner are read at once: both depend only on
		// the listing, and the client pipelines the two requests.
		var office *officeRead
		switch {
		case early != nil:
			office, early, armOffice = early, nil, false
		case contains(got.children, OfficeNode):
			office = r.startOffice(ctx, watch && armOffice)
		}
		es := parseChildren(got.children)
		for i, e := range es {
			p := participantFromName(e)
			if i > 0 && r.everyID {
				if d, _, err := r.details(ctx, e, false); err == nil {
					p = d
				} else if !errors.Is(err, zk.ErrNoNode) {
					return View{}, w, err
				}
			}
			if i == 0 && guessed != nil && e.name == guess {
				<-guessed
				if guessErr == nil {
					r.owner, r.ownerW = &guessP, guessW
				}
				guessed, guess = nil, ""
			}
			if i == 0 {
				owner, err := r.ownerDetails(ctx, e, watch)
				if errors.Is(err, zk.ErrNoNode) {
					break // owner just left: list again
				}
				if err != nil {
					return View{}, w, err
				}
				p = owner
			}
			v.Queue = append(v.Queue, p)
		}
		if len(es) > 0 && (len(v.Queue) == 0 || v.Queue[0].Node != es[0].name) {
			if watch {
				w.children = nil // a fresh watch is armed on the next pass
			}
			if office != nil {
				<-office.done
				if office.ch != nil { // keep the armed office watch
					w.office, armOffice = office.ch, false
				}
			}
			continue
		}
		if len(v.Queue) > 0 {
			v.Owner = &v.Queue[0]
			w.owner = r.ownerW
		} else {
			r.owner, r.ownerW = nil, nil
		}
		if office != nil {
			<-office.done
			if office.err != nil && !errors.Is(office.err, zk.ErrNoNode) {
				return View{}, w, office.err
			}
			v.Office, v.OfficeZxid = office.o, office.mzxid
			w.office = office.ch
		}
		return v, w, nil
	}
}

// officeRead is a read of the office running beside the owner's read.
type officeRead struct {
	done  chan struct{}
	o     *Office
	mzxid int64
	ch    <-chan zk.Event
	err   error
}

func (r *reader) startOffice(ctx context.Context, watch bool) *officeRead {
	or := &officeRead{done: make(chan struct{})}
	go func() {
		defer close(or.done)
		or.o, or.mzxid, or.ch, or.err = r.readOffice(ctx, watch)
	}()
	return or
}

func (r *reader) ownerDetails(ctx context.Context, e entry, watch bool) (Participant, error) {
	if r.owner != nil && r.owner.Node == e.name {
		return *r.owner, nil
	}
	p, ch, err := r.details(ctx, e, watch)
	if err != nil {
		return Participant{}, err
	}
	r.owner, r.ownerW = &p, ch
	return p, nil
}

// details reads a node's data (the participant id) and stat (session,
// term); with watch it also arms a data watch on the node.
func (r *reader) details(ctx context.Context, e entry, watch bool) (Participant, <-chan zk.Event, error) {
	type res struct {
		data []byte
		st   *zk.Stat
		ch   <-chan zk.Event
	}
	got, err := call(ctx, func() (res, error) {
		if watch {
			d, st, ch, err := r.conn.GetW(r.group + "/" + e.name)
			return res{d, st, ch}, err
		}
		d, st, err := r.conn.Get(r.group + "/" + e.name)
		return res{d, st, nil}, err
	})
	if err != nil {
		return Participant{}, nil, err
	}
	p := participantFromName(e)
	if id := strings.TrimSpace(string(got.data)); id != "" && isText(id) {
		p.ID = id
	}
	p.Session = got.st.EphemeralOwner
	p.Czxid = got.st.Czxid
	return p, got.ch, nil
}

func (r *reader) readOffice(ctx context.Context, watch bool) (*Office, int64, <-chan zk.Event, error) {
	type res struct {
		data []byte
		st   *zk.Stat
		ch   <-chan zk.Event
	}
	got, err := call(ctx, func() (res, error) {
		if watch {
			d, st, ch, err := r.conn.GetW(r.group + "/" + OfficeNode)
			return res{d, st, ch}, err
		}
		d, st, err := r.conn.Get(r.group + "/" + OfficeNode)
		return res{d, st, nil}, err
	})
	if err != nil {
		return nil, 0, nil, err
	}
	o, ok := decodeOffice(got.data)
	if !ok {
		return nil, got.st.Mzxid, got.ch, nil
	}
	return &o, got.st.Mzxid, got.ch, nil
}

func participantFromName(e entry) Participant {
	info, _ := ParseName(e.name)
	return Participant{ID: info.ID, Node: e.name, Session: info.Session, Sequence: e.seq}
}

func isText(s string) bool {
	if len(s) > 256 {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0xfffd {
			return false
		}
	}
	return true
}

// guessRecipe tells a lock from an election by the names its clients use;
// false when no name tells (no queue node).
func guessRecipe(children []string) (Recipe, bool) {
	for _, c := range children {
		if _, ok := ParseSequence(c); !ok {
			continue
		}
		if strings.Contains(c, "lock") {
			return RecipeLock, true
		}
		return RecipeElection, true
	}
	return "", false
}

// ObserveOption configures Observe.
type ObserveOption func(*observeOptions) error

type observeOptions struct {
	recipe Recipe
	buffer int
}

// AsRecipe says whether the group is an election or a lock (by default it
// is guessed from the node names: "lock" in them means a lock).
func AsRecipe(r Recipe) ObserveOption {
	return func(o *observeOptions) error {
		if r != RecipeElection && r != RecipeLock {
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
	done chan struct{}
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
