package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkherald/herald/elect"
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
	// Queue is every node in line, owner first; only ZooKeeper knows it.
	Queue []whoNode `json:"queue,omitempty"`
}

type whoNode struct {
	ID       string `json:"id"`
	Node     string `json:"node"`
	Session  string `json:"session,omitempty"`
	Sequence int32  `json:"sequence"`
	Term     int64  `json:"term,omitempty"`
	// Suspect says why the node cannot be what the queue says (not
	// ephemeral, or appeared below the owner); it is never the owner.
	Suspect string `json:"suspect,omitempty"`
}

func newWhoCmd(a *app) *cobra.Command {
	var sf sourceFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "who PATH",
		Short: "Show who owns an election or lock now, and who waits",
		Long: `who reads the current owner and queue of a group from ZooKeeper. It works for
any SEQUENCE|EPHEMERAL election or lock, written by herald or by other
clients (Curator, Kazoo, go-zookeeper). With --nats or --kafka it asks the
owners a bridge published instead (no queue), without touching ZooKeeper.`,
		Example: `  herald who --zk zk1:2181 /jobs/nightly
  herald who --nats nats://localhost:4222 /jobs/nightly --json
  herald who --kafka broker1:9092 /locks/backup`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("who takes exactly one group path, got %d (e.g. herald who /jobs/nightly)", len(args))
			}
			return groupArg("PATH", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := sf.which()
			if err != nil {
				return err
			}
			var r whoReport
			switch src {
			case "nats":
				r, err = a.whoNATS(cmd.Context(), &sf, args[0])
			case "kafka":
				r, err = a.whoKafka(cmd.Context(), &sf, args[0])
			default:
				r, err = a.whoZK(cmd.Context(), args[0])
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, r)
			}
			return writeWho(a.stdout, r)
		},
	}
	sf.addFlags(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func (a *app) whoZK(ctx context.Context, group string) (whoReport, error) {
	s, err := a.openSession(ctx, false)
	if err != nil {
		return whoReport{}, err
	}
	defer s.Close()
	v, err := elect.ReadGroup(ctx, s, group)
	if errors.Is(err, elect.ErrNoParent) {
		return whoReport{}, fmt.Errorf("group %s does not exist in ZooKeeper at %s; check the path", group, a.zk)
	}
	if err != nil {
		return whoReport{}, err
	}
	r := whoReport{Group: group, Recipe: v.Recipe, Source: "zookeeper", Ready: v.Ready()}
	for _, p := range v.Queue {
		r.Queue = append(r.Queue, whoNode{ID: p.ID, Node: p.Node, Session: p.SessionHex(), Sequence: p.Sequence, Term: p.Czxid, Suspect: p.Suspect})
		if v.Owner != nil && p.Node == v.Owner.Node {
			o := r.Queue[len(r.Queue)-1]
			r.Owner = &o
		}
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
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	w, err := jetstream.Follow(wctx, js, group)
	if err != nil {
		return whoReport{}, fmt.Errorf("read the owners bucket: %w", err)
	}
	var last *jetstream.OwnerUpdate
	for synced := false; !synced; {
		select {
		case u, ok := <-w.Updates():
			if !ok {
				return whoReport{}, fmt.Errorf("read the owners bucket: %v", w.Err())
			}
			if u.Group == group {
				last = &u
			}
		case <-w.Synced():
			synced = true
		}
	}
	// Synced closes once the initial values are all delivered; take any
	// that are still buffered.
	for drained := false; !drained; {
		select {
		case u, ok := <-w.Updates():
			if ok && u.Group == group {
				last = &u
			}
			drained = !ok
		default:
			drained = true
		}
	}
	if last == nil || last.Owner == nil {
		return whoReport{}, fmt.Errorf("no owner of %s in the NATS owners bucket: the group has no owner now, or no bridge watches it (ask ZooKeeper: herald who --zk HOSTS %s)", group, group)
	}
	o := last.Owner
	since := o.Since
	return whoReport{Group: group, Recipe: o.Recipe, Source: "nats", Ready: o.Ready, Since: &since,
		Owner: &whoNode{ID: o.Owner.ID, Node: o.Owner.Node, Session: o.Owner.Session, Sequence: o.Owner.Sequence, Term: o.Term}}, nil
}

func (a *app) whoKafka(ctx context.Context, sf *sourceFlags, group string) (whoReport, error) {
	cfg, err := sf.kafkaConfig(a.log)
	if err != nil {
		return whoReport{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := kafkasink.FollowOwners(wctx, cfg, group)
	if err != nil {
		return whoReport{}, fmt.Errorf("read %s: %w", kafkasink.DefaultOwnersTopic, err)
	}
	defer st.Close()
	var last *kafkasink.OwnerUpdate
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
	var owner *publish.Participant
	if last != nil {
		owner = last.Owner()
	}
	if owner == nil {
		return whoReport{}, fmt.Errorf("no owner of %s in Kafka topic %s: the group has no owner now, or no bridge watches it (ask ZooKeeper: herald who --zk HOSTS %s)", group, kafkasink.DefaultOwnersTopic, group)
	}
	since := last.Event.Time
	return whoReport{Group: group, Recipe: last.Event.Recipe, Source: "kafka", Ready: last.Ready(), Since: &since,
		Owner: &whoNode{ID: owner.ID, Node: owner.Node, Session: owner.Session, Sequence: owner.Sequence, Term: last.Event.Term}}, nil
}
