package bridge

import (
	"fmt"
	"slices"
	"sort"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
)

// Role is what a bridge is doing in its HA election.
type Role string

const (
	// RoleStarting: connecting to the sinks and ZooKeeper.
	RoleStarting Role = "starting"
	// RoleStandby: connected, waiting to become active (HA only).
	RoleStandby Role = "standby"
	// RoleActive: observing and publishing.
	RoleActive Role = "active"
	// RoleStopped: Run has returned or is draining.
	RoleStopped Role = "stopped"
)

// GroupState is how much the bridge knows about one observed group.
type GroupState string

const (
	// GroupPending: observed, no snapshot yet.
	GroupPending GroupState = "pending"
	// GroupLive: the snapshot was published and changes are streaming.
	GroupLive GroupState = "live"
	// GroupUnknown: the connection to ZooKeeper is lost; nothing is
	// published for the group until the snapshot after reconnecting.
	GroupUnknown GroupState = "unknown"
)

// Status is a snapshot of the bridge's state, what /readyz reports.
type Status struct {
	Session   string `json:"session"`
	SessionID string `json:"session_id,omitempty"`
	Sessions  int    `json:"sessions"`
	Role      Role   `json:"role"`
	// Shard is the bridge's part of the groups, "K/N" ("" for all).
	Shard  string                `json:"shard,omitempty"`
	Groups map[string]GroupState `json:"groups"`
	// ReadErrors says, for groups not live, why the last read of each
	// failed (an ACL that refuses READ, ...), when one did.
	ReadErrors map[string]string `json:"read_errors,omitempty"`
	// Discovering lists the discover roots not listed yet, and
	// ListErrors why the last listing of each failed, when one did
	// ("does not exist" for a --discover root that is missing); also of
	// a root, or a level below one, listed before whose listing fails now.
	Discovering []string              `json:"discovering,omitempty"`
	ListErrors  map[string]string     `json:"list_errors,omitempty"`
	Sinks       map[string]SinkStatus `json:"sinks"`
	// HAError says why the bridge's last try to join its HA election
	// failed, while it has not joined since (an ACL that refuses it): a
	// standby that cannot join can never take over.
	HAError string `json:"ha_error,omitempty"`
	// Published counts the events handed to the pipeline.
	Published int64 `json:"published"`
}

// SinkStatus is one sink's health.
type SinkStatus struct {
	Healthy bool `json:"healthy"`
	// Connected is false while the sink says its connection is down
	// (a NATS connection reconnecting).
	Connected bool   `json:"connected"`
	Backlog   int    `json:"backlog"`
	Delivered int64  `json:"delivered"`
	Errors    int64  `json:"errors"`
	LastError string `json:"last_error,omitempty"`
}

// Unknown lists the groups not live (pending or unknown), sorted.
func (s Status) Unknown() []string {
	var out []string
	for g, st := range s.Groups {
		if st != GroupLive {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out
}

// listedNoLonger says which discover roots (or levels below them), listed
// before, fail to be listed now, and why: the heartbeats wait for them, so
// the bridge confirms nothing meanwhile.
func (s Status) listedNoLonger() []string {
	var why []string
	for r, e := range s.ListErrors {
		if !slices.Contains(s.Discovering, r) {
			why = append(why, fmt.Sprintf("%s, listed before, cannot be listed now (no heartbeat confirms the bridge's groups until it can): %s", r, e))
		}
	}
	sort.Strings(why)
	return why
}

// readErrorsShown bounds how many groups' read errors NotReady spells out.
const readErrorsShown = 5

// NotReady says what keeps the bridge from being ready; empty means ready:
// the session is connected, the bridge is active or standby, every observed
// group is live and every sink healthy.
func (s Status) NotReady() []string {
	var why []string
	if s.Session != elect.StateConnected.String() {
		why = append(why, fmt.Sprintf("ZooKeeper session is %s", s.Session))
	}
	if s.Role != RoleActive && s.Role != RoleStandby {
		why = append(why, fmt.Sprintf("bridge is %s", s.Role))
	}
	if s.HAError != "" {
		why = append(why, "cannot join the HA election, so it can never take over: "+s.HAError)
	}
	var listing []string
	for _, r := range s.Discovering {
		switch s.ListErrors[r] {
		case rootMissing, rootEphemeral:
			why = append(why, fmt.Sprintf("discover root %s %s", r, s.ListErrors[r]))
		default:
			listing = append(listing, r)
		}
	}
	if len(listing) > 0 {
		why = append(why, fmt.Sprintf("discover roots not listed yet: %v", listing))
		for _, r := range listing {
			if e := s.ListErrors[r]; e != "" {
				why = append(why, fmt.Sprintf("discover root %s cannot be listed: %s", r, e))
			}
		}
	}
	why = append(why, s.listedNoLonger()...)
	if u := s.Unknown(); len(u) > 0 {
		if len(u) > 20 {
			why = append(why, fmt.Sprintf("%d groups not live: %v and %d more", len(u), u[:20], len(u)-20))
		} else {
			why = append(why, fmt.Sprintf("%d groups not live: %v", len(u), u))
		}
		shown := 0
		for _, g := range u {
			if e := s.ReadErrors[g]; e != "" && shown < readErrorsShown {
				why = append(why, fmt.Sprintf("%s cannot be read: %s", g, e))
				shown++
			}
		}
	}
	names := make([]string, 0, len(s.Sinks))
	for n := range s.Sinks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if st := s.Sinks[n]; !st.Healthy {
			msg := fmt.Sprintf("sink %s is not healthy (backlog %d)", n, st.Backlog)
			if !st.Connected {
				msg = fmt.Sprintf("sink %s is not healthy: not connected (backlog %d)", n, st.Backlog)
			}
			if st.LastError != "" {
				msg += ": " + st.LastError
			}
			why = append(why, msg)
		}
	}
	return why
}

// sinkStatus judges one sink: healthy when the pipeline says so (its
// connection is up, as far as it can tell, no write is failing, its backlog
// is within bound) and, while the pipeline has not written to it yet, the
// bridge's own connect at start succeeded.
func sinkStatus(st publish.SinkStats, connectedAtStart bool) SinkStatus {
	fresh := st.Delivered == 0 && st.Errors == 0
	return SinkStatus{
		Healthy:   st.Healthy() && (!fresh || connectedAtStart),
		Connected: !st.Down,
		Backlog:   st.Backlog,
		Delivered: st.Delivered,
		Errors:    st.Errors,
		LastError: st.LastError,
	}
}
