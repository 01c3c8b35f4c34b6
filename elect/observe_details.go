package elect

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkherald/herald/elect/ident"
)

// guessRead is a read of the likely next owner running beside a listing.
type guessRead struct {
	name string
	done chan struct{}
	p    Participant
	ch   <-chan zk.Event
	err  error
}

func (r *reader) startGuess(ctx context.Context, name string, watch bool) *guessRead {
	if name == "" {
		return nil
	}
	g := &guessRead{name: name, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		seq, _ := ParseSequence(name)
		g.p, g.ch, g.err = r.details(ctx, entry{name: name, seq: seq}, watch)
	}()
	return g
}

// adopt makes the guessed read the owner's when the listing shows the
// guess owns.
func (g *guessRead) adopt(r *reader, owner string) {
	if g == nil || g.name != owner {
		return
	}
	<-g.done
	if g.err == nil {
		r.owner, r.ownerW = &g.p, g.ch
	}
	g.name = ""
}

func (g *guessRead) wait() {
	if g != nil {
		<-g.done
	}
}

// recipeOf says what the group holds: the recipe given, else the one
// herald's own names carry, else the documented rule for the first name
// that tells (see RecipeOfName), else what herald wrote on the group node
// when it created it. Once known it is kept: an emptied lock stays a lock,
// also for a later observation that knows what an earlier one saw
// (reader.hint). A group that nothing tells about reads as an election,
// and guessed says so.
func (r *reader) recipeOf(ctx context.Context, children []string) (rec Recipe, guessed bool) {
	if r.recipe != "" {
		return r.recipe, false
	}
	if rec, ok := recipeOfNames(children); ok {
		r.recipe = rec
		return rec, false
	}
	if !r.askedGroup {
		r.askedGroup = true
		if rec, ok := readGroupRecipe(ctx, r.conn, r.group); ok {
			r.recipe = rec
			return rec, false
		}
	}
	if r.hint != "" {
		return r.hint, false
	}
	return RecipeElection, true
}

// officeRead is a read of the office running beside the owner's read.
type officeRead struct {
	done  chan struct{}
	o     *Office
	mzxid int64
	ch    <-chan zk.Event
	err   error
}

// wait waits for the read to end; a nil read has nothing to wait for.
func (or *officeRead) wait() {
	if or != nil {
		<-or.done
	}
}

func (r *reader) startOffice(ctx context.Context, watch bool) *officeRead {
	or := &officeRead{done: make(chan struct{})}
	go func() {
		defer close(or.done)
		or.o, or.mzxid, or.ch, or.err = r.readOffice(ctx, watch)
	}()
	return or
}

// ownerDetails returns the owner's details, read once per owner: a node's
// creator and id do not change while it exists, whoever writes its data
// later. A watch that fired on such a write is set again.
func (r *reader) ownerDetails(ctx context.Context, e entry, watch bool) (Participant, error) {
	watch = watch && !r.noOwnerWatch
	if r.owner != nil && r.owner.Node == e.name {
		if watch && r.ownerW == nil {
			_, ch, err := r.details(ctx, e, true)
			if err != nil {
				return Participant{}, err
			}
			r.ownerW = ch
		}
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
	got, err := readNode(ctx, r.conn, r.group+"/"+e.name, watch)
	if errors.Is(err, zk.ErrNoAuth) {
		// Its ACL hides the node's data (the id) from us. Its stat says
		// what matters more, the session that holds it and its term, and
		// exists needs no READ (before ZooKeeper 3.9).
		st, xerr := call(ctx, func() (*zk.Stat, error) {
			ok, st, err := r.conn.Exists(r.group + "/" + e.name)
			if err == nil && !ok {
				return nil, zk.ErrNoNode
			}
			return st, err
		})
		if xerr != nil && !errors.Is(xerr, zk.ErrNoAuth) {
			return Participant{}, nil, xerr
		}
		if xerr == nil {
			got.st, err = st, nil
		}
	}
	if err != nil {
		return Participant{}, nil, err
	}
	p := participantFromName(e)
	if id := idFromData(r.group+"/"+e.name, got.data); id != "" {
		p.ID = id
	}
	p.Session = got.st.EphemeralOwner
	p.Czxid = got.st.Czxid
	return p, got.ch, nil
}

func (r *reader) readOffice(ctx context.Context, watch bool) (*Office, int64, <-chan zk.Event, error) {
	got, err := readNode(ctx, r.conn, r.group+"/"+OfficeNode, watch)
	if err != nil {
		return nil, 0, nil, err
	}
	o, ok := decodeOffice(got.data, got.st)
	if !ok {
		return nil, got.st.Mzxid, got.ch, nil
	}
	return &o, got.st.Mzxid, got.ch, nil
}

// participantFromName is what a node's name says: its id and sequence. The
// session a name claims is not kept: only the node's ephemeralOwner says
// which session holds it. A protected name (Curator's, go-zookeeper's)
// says no more than its recipe's lock name ("latch", "lock"), which is no
// id: every client of the group has it, and a LeaderLatch holding no id
// passed ownership from "latch" to "latch"; the id is then the node's name
// (Participant.String shows it once).
func participantFromName(e entry) Participant {
	info, _ := ParseName(e.name)
	id := info.ID
	if info.Convention == "curator" || info.Convention == "go-zookeeper" {
		id = e.name
	}
	return Participant{ID: id, Node: e.name, Sequence: e.seq}
}

// idFromData is the participant id a node's data gives: short text as
// herald, Curator and Kazoo store it, or what a system's own format says
// (Mesos' MasterInfo JSON in json.info_ nodes); "" when it gives none.
func idFromData(nodePath string, data []byte) string {
	if ident.ForPath(nodePath) == ident.Mesos {
		if id, err := ident.Decode(ident.Mesos, nodePath, data); err == nil {
			return id.ID
		}
	}
	if id := strings.TrimSpace(string(data)); id != "" && isText(id) {
		return id
	}
	return ""
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

// recipeOfNames reads a group's recipe from its queue nodes' names:
// herald's names carry it, and win over the rule for other names.
func recipeOfNames(children []string) (Recipe, bool) {
	var byRule Recipe
	for _, c := range children {
		info, ok := ParseName(c)
		switch {
		case !ok || info.Recipe == "":
		case info.Convention == "herald":
			return info.Recipe, true
		case byRule == "":
			byRule = info.Recipe
		}
	}
	return byRule, byRule != ""
}
