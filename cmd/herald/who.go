package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	jsapi "github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/elect/ident"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/jetstream"
	"github.com/zkherald/herald/sinks/kafkasink"
)

func init() { register(newWhoCmd) }

// whoReport is what herald who prints, whatever the source.
type whoReport struct {
	Group  string       `json:"group"`
	Recipe elect.Recipe `json:"recipe,omitempty"`
	Source string       `json:"source"`
	Owner  *whoNode     `json:"owner"`
	Ready  bool         `json:"ready"`
	// ReadyInfo is what the leader wrote when it took office (herald run
	// writes the child's pid).
	ReadyInfo string     `json:"ready_info,omitempty"`
	Since     *time.Time `json:"since,omitempty"`
	// SinceAtMost (--nats, --kafka): the owner was first reported by a
	// snapshot (a bridge's start, a takeover, a reconnect), so its tenure
	// began at Since or before, unseen.
	SinceAtMost bool `json:"since_at_most,omitempty"`
	// Queue is every node in line, owner first; only ZooKeeper knows it.
	Queue []whoNode `json:"queue,omitempty"`
	// Hazard says why two of the group's clients may each believe they
	// own: one of them cannot order a node below its own. From ZooKeeper
	// as it is now; from NATS or Kafka as the group's latest event said.
	Hazard string `json:"hazard,omitempty"`
	// Leader: a single-node leader's identity and epoch (who_single.go).
	Leader *whoLeader `json:"leader,omitempty"`
	// Stale (--nats, --kafka): no bridge has confirmed the value within
	// its bound, or the one that would stopped; ZooKeeper may say
	// otherwise. Confirmed is when ConfirmedBy last confirmed it.
	Stale       bool       `json:"stale"`
	Confirmed   *time.Time `json:"confirmed,omitempty"`
	ConfirmedBy string     `json:"confirmed_by,omitempty"`
	StaleReason string     `json:"stale_reason,omitempty"`
	// NoLongerConfirmed (publish.Freshness.OutOfScope): ConfirmedBy's
	// heartbeats leave the group out now (restarted under another shard
	// or configuration), so Confirmed is unset though the value was
	// confirmed when it was written; without it a script saw a stale
	// owner and no "confirmed", as if never confirmed.
	NoLongerConfirmed bool `json:"no_longer_confirmed,omitempty"`
	// freshness says it in one line, for people.
	freshness string
	// ChangesLastHour is how often the owner changed in the last hour, and
	// OwnerlessSince since when the group has had none (from the history
	// a bridge published, --nats or --kafka; from ZooKeeper, only the
	// time of a release herald recorded).
	ChangesLastHour *int `json:"changes_last_hour,omitempty"`
	// ChangesLastHourAtLeast: ChangesLastHour is a lower bound, because an
	// event of the last hour says gap, no bridge confirms the group now,
	// the group's stored events begin within the hour (EventsFrom), or
	// none is stored.
	ChangesLastHourAtLeast bool `json:"changes_last_hour_at_least,omitempty"`
	// EventsFrom is when the group's oldest stored event was published,
	// when that is within the last hour: changes before it (dropped by
	// the stream's limits, or made before a bridge observed the group)
	// are not counted. changesGap: an event of the hour says gap;
	// noEvents: no event of the group is stored at all.
	EventsFrom     *time.Time `json:"events_from,omitempty"`
	changesGap     bool
	noEvents       bool
	OwnerlessSince *time.Time `json:"ownerless_since,omitempty"`
	// OwnerlessSinceAtMost: the stretch may have begun earlier (the
	// bridge saw the loss late, publish.Event.NotBefore).
	OwnerlessSinceAtMost bool `json:"ownerless_since_at_most,omitempty"`
	// Notes says what in the group herald could not read, and what to do.
	Notes []string `json:"notes,omitempty"`
	// BlockedBy is the suspect node the queue waits behind when nobody
	// owns (elect.View.Blocked).
	BlockedBy string `json:"blocked_by,omitempty"`
	// Below lists (sorted, at most whoBelowMax) the children of a node
	// with no queue nodes: asked about a parent of groups, who names them.
	Below []string `json:"below,omitempty"`
}

// addNote adds what the bridge said to know of the owner (the event's
// Note, as who --zk says it of a KRaft controller's /controller).
func (r *whoReport) addNote(note string) {
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
}

// whoBelowMax is how many children of a node with no queue who names.
const whoBelowMax = 5

type whoNode struct {
	ID       string `json:"id"`
	Node     string `json:"node"`
	Session  string `json:"session,omitempty"`
	Sequence int32  `json:"sequence"`
	Term     int64  `json:"term,omitempty"`
	// Suspect says why the node cannot be what the queue says (not
	// ephemeral, or appeared below the owner); it is never the owner.
	Suspect string `json:"suspect,omitempty"`
	// MayOwn: the node's client cannot order a node below it (see
	// whoReport.Hazard), so it may believe it owns.
	MayOwn bool `json:"may_believe_it_owns,omitempty"`
}

// whoLong is who's help.
const whoLong = `who reads the current owner and queue of a group from ZooKeeper. It works for
any SEQUENCE|EPHEMERAL election or lock, written by herald or by other
clients (Curator, Kazoo, go-zookeeper). With --nats or --kafka it asks the
owners a bridge published instead (no queue), without touching ZooKeeper.

A value read from NATS or Kafka is only as fresh as the bridge that wrote it:
the active bridge confirms its values with a heartbeat (bridge --heartbeat,
5s by default). When none has confirmed the value for 3 heartbeats, or the
bridge said it stopped, who prints "stale: last confirmed by BRIDGE at TIME,
AGE ago" and exits 4; --json says "stale": true and "confirmed". A value
whose bridge no longer observes the group (restarted under another shard or
configuration) is "no longer confirmed"; --json says "no_longer_confirmed":
true. Ask ZooKeeper (--zk) for the truth.

Exit codes: 0 the owner is shown; 5 no owner (the group exists, nobody leads
or holds it; from NATS or Kafka, a bridge that observes the group confirms
it); 4 the value shown is stale (--nats, --kafka), with an owner or without,
or no running bridge observes the group; 69 ZooKeeper, NATS or Kafka cannot be reached, or JetStream on the
NATS cluster cannot serve now (no quorum); 1 it could not be read otherwise
(the group does not exist, ...); 2 usage errors. With --preset: 0 when
anything the preset names was found.`

func newWhoCmd(a *app) *cobra.Command {
	var sf sourceFlags
	var asJSON bool
	var preset []string // --preset (who_single.go)
	var recipe, format string
	cmd := &cobra.Command{
		Use:   "who PATH",
		Short: "Show who owns an election or lock now, and who waits",
		Long:  whoLong,
		Example: `  herald who --zk zk1:2181 /jobs/nightly
  herald who --nats nats://localhost:4222 /jobs/nightly --json
  herald who --kafka broker1:9092 /locks/backup`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(preset) > 0 && len(args) == 0 {
				return nil
			}
			if len(args) != 1 {
				return usageErr("who takes exactly one group path, got %d (e.g. herald who /jobs/nightly)", len(args))
			}
			if err := groupArg("PATH", args[0]); err != nil {
				return err
			}
			return notHeraldsOwn(args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(preset) > 0 {
				if format != "" {
					return usageErr("--preset reads each node in its system's format; give --format with a PATH instead")
				}
				return a.whoPreset(cmd.Context(), preset, args, &sf, asJSON)
			}
			src, err := sf.which()
			if err != nil {
				return err
			}
			if recipe != "" && !elect.Recipe(recipe).Known() {
				return usageErr("--recipe %q: want election or lock", recipe)
			}
			sn, err := whoFormat(format, recipe, src)
			if err != nil {
				return err
			}
			r, err := a.whoFrom(cmd.Context(), src, &sf, args[0], sn)
			if err == nil && recipe != "" && r.Leader == nil {
				r.Recipe = elect.Recipe(recipe)
			}
			if unreachable(err) {
				return &exitError{code: exitUnreachable, err: err}
			}
			if err != nil {
				return err
			}
			return a.printWho(r, asJSON)
		},
	}
	sf.addFlags(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().StringVar(&recipe, "recipe", "", "election or lock: what the group holds, where its node names do not tell (Kazoo Election and Curator LeaderSelector write lock names)")
	cmd.Flags().StringVar(&format, "format", "", "read PATH as a single-node leader written in this format ("+formatNames()+"), where its name suggests another system's (a .../master that is not HBase's); by default the format follows the path")
	addPresetFlag(cmd.Flags(), &preset)
	return cmd
}

// whoFormat is how who --format reads the node (nil without the flag).
// It reads ZooKeeper only: what a bridge published it decoded itself,
// as its --leader PATH=FORMAT said.
func whoFormat(format, recipe, src string) (*elect.SingleNode, error) {
	if format == "" {
		return nil, nil
	}
	f, err := ident.ParseFormat(format)
	switch {
	case err != nil:
		return nil, usageErr("--format %q: want one of %s", format, formatNames())
	case recipe != "":
		return nil, usageErr("give --format (a single-node leader's) or --recipe (a queue group's), not both")
	case src != "":
		return nil, usageErr("--format reads ZooKeeper (--zk); the bridge decodes what it publishes to --%s as its --leader PATH=FORMAT says", src)
	}
	sn := elect.SingleNode{Format: f}
	return &sn, nil
}

// formatNames lists the leader formats, for flags' help and errors.
func formatNames() string {
	names := make([]string, len(ident.Formats))
	for i, f := range ident.Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// whoFrom reads group's owner from src: ZooKeeper, or what a bridge
// published on NATS or Kafka, with that bridge's health.
func (a *app) whoFrom(ctx context.Context, src string, sf *sourceFlags, group string, sn *elect.SingleNode) (whoReport, error) {
	var r whoReport
	var err error
	switch src {
	case "nats":
		r, err = a.whoNATS(ctx, sf, group)
	case "kafka":
		r, err = a.whoKafka(ctx, sf, group)
	default:
		return a.whoZK(ctx, group, sn)
	}
	err = a.withHealth(ctx, sf, &r, err) // marks r stale when no bridge vouches for it
	return r, err
}

// waitsBehind says what a blocked queue waits behind (elect.View.Blocked)
// and how to end the wait.
func waitsBehind(group string, b elect.Participant) string {
	return fmt.Sprintf("waits behind %s, which is %s; if it is a leftover, delete it (zkCli.sh: delete %s/%s)", b.Node, b.Suspect, group, b.Node)
}

func (a *app) whoZK(ctx context.Context, group string, sn *elect.SingleNode) (whoReport, error) {
	s, err := a.openSession(ctx, false)
	if err != nil {
		return whoReport{}, err
	}
	defer s.Close()
	// A single-node leader (Kafka's /controller, ...): who_single.go.
	single, ok, err := a.whoSingleZK(ctx, s, group, sn)
	if ok || err != nil {
		return single, err
	}
	v, err := elect.ReadGroup(ctx, s, group)
	if errors.Is(err, elect.ErrNoParent) {
		return whoReport{}, fmt.Errorf("group %s does not exist in ZooKeeper at %s; check the path", group, a.zk)
	}
	if err != nil {
		return whoReport{}, err
	}
	r := whoReport{Group: group, Recipe: v.Recipe, Source: "zookeeper", Ready: v.Ready(), Hazard: v.Hazard}
	if v.RecipeGuessed() && v.Owner == nil && len(v.Queue) == 0 {
		r.Recipe = "" // nothing tells: not called an election (it may be a parent of groups)
	}
	if v.Owner == nil && v.LastRelease != nil {
		t := v.LastRelease.Time
		r.OwnerlessSince = &t
	}
	for _, p := range v.Queue {
		r.Queue = append(r.Queue, whoNode{ID: p.ID, Node: p.Node, Session: p.SessionHex(), Sequence: p.Sequence, Term: p.Czxid, Suspect: p.Suspect,
			MayOwn: v.HazardNode != "" && p.Node == v.HazardNode})
		if v.Owner != nil && p.Node == v.Owner.Node {
			o := r.Queue[len(r.Queue)-1]
			r.Owner = &o
		}
	}
	if len(v.Queue) == 0 {
		r.Below = childrenBelow(ctx, s, group)
	}
	r.Notes = append(r.Notes, single.Notes...) // why a system's node is no leader's
	if b := v.Blocked; b != nil {
		r.BlockedBy = b.Node
		r.Notes = append(r.Notes, "nobody owns: the queue "+waitsBehind(group, *b)+" and the next in line owns")
	}
	if v.OfficeUnreadable() {
		r.Notes = append(r.Notes, fmt.Sprintf("%s/%s holds data herald did not write, so whether the owner took office is not known; the owner's next acknowledgment replaces it (herald run writes one when it starts its command)", group, elect.OfficeNode))
	}
	if r.Ready && v.Office.Ack != nil {
		r.ReadyInfo = v.Office.Ack.Info
		t := v.Office.Ack.Time
		r.Since = &t
	}
	return r, nil
}

func (a *app) whoNATS(ctx context.Context, sf *sourceFlags, group string) (whoReport, error) {
	js, closeNC, err := sf.jetStream(ctx, a.log)
	if err != nil {
		return whoReport{}, err
	}
	defer closeNC()
	var last *jetstream.OwnerUpdate
	skipped, err := readOwners(ctx, js, group, func(u jetstream.OwnerUpdate) {
		if u.Group == group {
			last = &u
		}
	})
	if err != nil {
		return whoReport{}, err
	}
	r := whoReport{Group: group, Source: "nats"}
	if last == nil {
		// Follow reports a group whose key is missing too (as no owner, or
		// unknown): nothing means the key holds a value Follow skipped.
		// That says nothing of the owner, so it must not read "no owner".
		return r, unreadableOwner(group, skipped)
	}
	if o := last.Owner; o != nil {
		since := o.Since
		r.Recipe, r.Ready, r.Since, r.SinceAtMost, r.Hazard = o.Recipe, o.Ready, &since, o.SinceUnseen, o.Hazard
		r.Owner = &whoNode{ID: o.Owner.ID, Node: o.Owner.Node, Session: o.Owner.Session, Sequence: o.Owner.Sequence, Term: o.Term}
		r.addNote(o.Note)
	} else {
		r.addNote(last.Note) // why nobody holds it, when its bridge said
	}
	r.setFreshness(last.Freshness)
	return r, nil
}

func (a *app) whoKafka(ctx context.Context, sf *sourceFlags, group string) (whoReport, error) {
	cfg, err := sf.kafkaConfig(a.log)
	if err != nil {
		return whoReport{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	fol, err := publish.NewFollower()
	if err != nil {
		return whoReport{}, err
	}
	st, err := kafkasink.FollowOwners(wctx, cfg, group, kafkasink.WithFollower(fol))
	if err != nil {
		return whoReport{}, fmt.Errorf("read %s: %w", kafkasink.DefaultOwnersTopic, err)
	}
	defer st.Close()
	var last *kafkasink.OwnerUpdate
	r := whoReport{Group: group, Source: "kafka"}
	for synced := false; !synced; {
		select {
		case u, ok := <-st.C():
			if !ok {
				return whoReport{}, fmt.Errorf("read %s: %v", kafkasink.DefaultOwnersTopic, st.Err())
			}
			last = &u
		case <-st.Synced():
			synced = true
		}
	}
	if last == nil {
		if n := st.Skipped(); n > 0 {
			// The group's records are none herald wrote: that says
			// nothing of its owner.
			return r, fmt.Errorf("%s holds %d record(s) under %s's key that are no owner herald wrote (written by hand, or by another tool), so who owns it cannot be told: ask ZooKeeper (herald who --zk HOSTS %s); the bridge writes the key again at the group's next change",
				kafkasink.DefaultOwnersTopic, n, group, group)
		}
		// The topic holds nothing of the group: "no owner" only while a
		// bridge that observes it confirms.
		r.setFreshness(fol.Freshness(group, time.Now()))
		return r, nil
	}
	r.Recipe = last.Event.Recipe
	if owner := last.Owner(); owner != nil {
		since := last.Event.Time
		r.Ready, r.Since, r.SinceAtMost, r.Hazard = last.Ready(), &since, last.SinceUnseen, last.Event.Hazard
		r.Owner = &whoNode{ID: owner.ID, Node: owner.Node, Session: owner.Session, Sequence: owner.Sequence, Term: last.Event.Term}
	}
	r.addNote(last.Event.Note) // of the owner, or why nobody holds it
	r.setFreshness(last.Freshness)
	return r, nil
}

// ownersStall is how long a read of the owners bucket waits for its next
// step (each a JetStream request or a value) before it gives up: a
// JetStream cluster without quorum may leave a request unanswered rather
// than refuse it. ownersRead bounds the whole read.
const (
	ownersStall = 5 * time.Second
	ownersRead  = 15 * time.Second
)

// unreadableOwner is who's error for a group the owners bucket gave no
// update of: its key holds a value that is no herald owner (skipped > 0:
// written by hand or by another tool), or, not expected, nothing at all.
func unreadableOwner(group string, skipped uint64) error {
	what := "the owners bucket gave nothing for " + group
	if skipped > 0 {
		tok, _ := publish.Tokens(group)
		what = fmt.Sprintf("the owners bucket %s holds a value under %s's key (%s) that is no owner herald wrote (edited by hand, or written by another tool)", jetstream.DefaultBucket, group, tok)
	}
	return fmt.Errorf("%s, so who it names cannot be told: ask ZooKeeper (herald who --zk HOSTS %s); the bridge writes the key again at the group's next change", what, group)
}

// readOwners reads the JetStream owners bucket (group's value, or all),
// giving take every value it holds now. It returns how many values it
// skipped as no herald owner (jetstream.OwnerWatch.Skipped).
func readOwners(ctx context.Context, js jsapi.JetStream, group string, take func(jetstream.OwnerUpdate)) (uint64, error) {
	wctx, cancel := context.WithTimeout(ctx, ownersRead)
	defer cancel()
	wctx, stop := context.WithCancelCause(wctx)
	defer stop(nil)
	stall := time.AfterFunc(ownersStall, func() { stop(errStalled) })
	defer stall.Stop()
	fail := func(err error) error {
		if err == nil {
			err = errors.New("the watch ended")
		}
		if errors.Is(context.Cause(wctx), errStalled) {
			err = fmt.Errorf("nothing for %v: %w (%w)", ownersStall, errStalled, err)
		}
		return jsErr(ctx, fmt.Errorf("read the owners bucket: %w", err))
	}
	w, err := jetstream.Follow(wctx, js, group)
	if err != nil {
		return 0, fail(err)
	}
	for synced := false; !synced; {
		select {
		case u, ok := <-w.Updates():
			if !ok {
				return w.Skipped(), fail(w.Err())
			}
			stall.Reset(ownersStall)
			take(u)
		case <-w.Synced():
			synced = true
		}
	}
	// Synced closes once the initial values are all delivered; take any
	// that are still buffered.
	for {
		select {
		case u, ok := <-w.Updates():
			if !ok {
				return w.Skipped(), nil
			}
			take(u)
		default:
			return w.Skipped(), nil
		}
	}
}

// setFreshness records what the heartbeats say of a value from NATS or
// Kafka.
func (r *whoReport) setFreshness(f publish.Freshness) {
	r.Stale, r.ConfirmedBy, r.StaleReason = f.Stale, f.ConfirmedBy, f.StaleReason
	r.NoLongerConfirmed = f.OutOfScope
	if !f.Confirmed.IsZero() {
		t := f.Confirmed
		r.Confirmed = &t
	}
	switch d := f.Describe(time.Now()); {
	case d == "" && f.Stale:
		r.freshness = "stale: " + f.StaleReason // no bridge ever confirmed it
	case d == "":
	case f.Stale:
		r.freshness = "stale: " + d
	case f.BridgeState == "":
		r.freshness = d // not judged: the writer sends no heartbeats
	default:
		r.freshness = "fresh: " + d
	}
}

// printWho prints the report, and its freshness for a value from NATS or
// Kafka; a stale value exits with exitStale, no owner with exitNoOwner.
func (a *app) printWho(r whoReport, asJSON bool) error {
	var err error
	switch {
	case asJSON:
		err = writeJSON(a.stdout, r)
	case r.Owner == nil && r.Source != "zookeeper" && r.Stale:
		// Not "no owner": nothing confirms it, and ZooKeeper may say
		// otherwise (the line after says why).
		_, err = fmt.Fprintf(a.stdout, "%s (from %s): owner unknown: no bridge confirms the group now%s\n", r.Group, r.Source, lastSaid(r))
	case r.Owner == nil && r.Source != "zookeeper":
		_, err = fmt.Fprintf(a.stdout, "%s (from %s): no owner%s\n", r.Group, r.Source, ownerlessSince(r))
	default:
		err = writeWho(a.stdout, r)
	}
	if err == nil && r.freshness != "" && !asJSON {
		_, err = fmt.Fprintln(a.stdout, r.freshness)
	}
	if err == nil && r.Hazard != "" && !asJSON {
		_, err = fmt.Fprintln(a.stdout, "two owners possible: "+r.Hazard)
	}
	for _, n := range r.Notes {
		if err == nil && !asJSON {
			_, err = fmt.Fprintln(a.stdout, "note: "+n)
		}
	}
	switch {
	case err != nil:
		return err
	case !r.Stale && r.Owner == nil:
		return &exitError{code: exitNoOwner} // said on stdout
	case !r.Stale:
		return nil
	case asJSON:
		return &exitError{code: exitStale, err: fmt.Errorf("the %s value of %s is %s (ask ZooKeeper: herald who --zk HOSTS %s)", r.Source, r.Group, r.freshness, r.Group)}
	}
	return &exitError{code: exitStale}
}

// lastSaid says what the latest value a bridge published of a group said,
// when it said no owner, for a report that is stale.
func lastSaid(r whoReport) string {
	if r.OwnerlessSince == nil {
		return ""
	}
	return "; the last value published said no owner" + ownerlessSince(r)
}

// ownerlessSince says, for a group without an owner, since when and how
// often its owner changed in the last hour, as far as the history read
// tells ("" when it does not).
func ownerlessSince(r whoReport) string {
	out := ""
	if r.OwnerlessSince != nil {
		out = " since " + r.OwnerlessSince.UTC().Format(time.RFC3339)
		if r.OwnerlessSinceAtMost {
			out += " or earlier"
		}
		out += fmt.Sprintf(" (%s ago)", time.Since(*r.OwnerlessSince).Round(time.Second))
	}
	return out + changesLastHour(r)
}

// childrenBelow names the children of a node that holds no queue nodes,
// herald's own side nodes left out: the groups a person most likely meant.
// It is a hint; a failed read gives none.
func childrenBelow(ctx context.Context, s *elect.Session, group string) []string {
	ch, _, err := s.Conn().Children(group)
	if err != nil || ctx.Err() != nil {
		return nil
	}
	var out []string
	for _, c := range ch {
		if c != elect.OfficeNode && c != elect.CheckpointNode {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	if len(out) > whoBelowMax {
		out = out[:whoBelowMax]
	}
	return out
}
