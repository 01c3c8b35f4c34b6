package publish

// collapse shrinks a backlog that hit its bound, group by group, keeping
// exactly what a consumer's views need and never reordering a group:
//
//   - the newest owner event (gain or loss): it alone decides who owns the
//     group afterwards, and its term is above every dropped one, so a
//     consumer that applies it lands on the right owner;
//   - the newest leader.ready after that owner event, if any;
//   - for each candidate node, its newest event, except that a node which
//     both joined and left within the backlog is dropped entirely (the
//     consumer never heard of it, and node names are never reused).
//
// Every kept event of a group that lost any event gets Gap=true, so
// consumers know they did not see every step. Kept events stay where they
// were, so the relative order of every group's events is unchanged. It
// returns the new backlog and how many events were dropped.
func collapse(q []Event) ([]Event, int) {
	type groupInfo struct {
		owner, ready int            // index of the newest owner / ready event, -1 if none
		cand         map[string]int // candidate node -> index of its newest event
		joined       map[string]bool
		lossy        bool
	}
	groups := make(map[string]*groupInfo)
	for i := range q {
		e := &q[i]
		g := groups[e.Group]
		if g == nil {
			g = &groupInfo{owner: -1, ready: -1}
			groups[e.Group] = g
		}
		switch {
		case e.Type.Gains() || e.Type.Loses():
			g.owner, g.ready = i, -1
		case e.Type == LeaderReady:
			g.ready = i
		case e.Candidate != nil:
			if g.cand == nil {
				g.cand, g.joined = map[string]int{}, map[string]bool{}
			}
			g.cand[e.Candidate.Node] = i
			if e.Type == CandidateJoined {
				g.joined[e.Candidate.Node] = true
			}
		}
	}
	keep := func(i int) bool {
		e := &q[i]
		g := groups[e.Group]
		switch {
		case e.Type.Gains() || e.Type.Loses():
			return i == g.owner
		case e.Type == LeaderReady:
			return i == g.ready
		case e.Candidate != nil:
			n := e.Candidate.Node
			if g.cand[n] != i {
				return false
			}
			return !(e.Type == CandidateLeft && g.joined[n])
		}
		return true
	}
	kept := make([]bool, len(q))
	for i := range q {
		kept[i] = keep(i)
		if !kept[i] {
			groups[q[i].Group].lossy = true
		}
	}
	out := q[:0]
	for i := range q {
		if !kept[i] {
			continue
		}
		e := q[i]
		if groups[e.Group].lossy {
			e.Gap = true
		}
		out = append(out, e)
	}
	dropped := len(q) - len(out)
	clear(q[len(out):])
	return out, dropped
}
