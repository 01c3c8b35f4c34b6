package elect

// ForeignInGroup reports whether the group held a queue node herald did
// not write (a Curator, Kazoo or go-zookeeper client's, the classic
// recipe's) at any listing of the owner's guard. It stays true once seen:
// an operator's deleteall deletes the client's node before or after ours,
// and the client makes it again at once (Curator does), so the listing
// between the two tells nothing of who comes next. Such a client next in
// line owns as soon as our node goes: unlike a herald runner, it waits for
// no record that our work stopped (PredecessorReleased) and no bound. So
// an owner whose node was deleted by hand must stop its work at once, not
// within GiveBackDelay, where one was there.
func (h *Handle) ForeignInGroup() bool { return h.foreign.Load() }

// foreignIn reports whether children holds a queue node herald did not
// write, inert ones (named like a client's, but none: see isClient) aside.
func foreignIn(children []string, inert map[string]bool) bool {
	for _, c := range children {
		if _, ok := ParseSequence(c); !ok || inert[c] {
			continue
		}
		if _, _, ok := heraldNode(c); !ok {
			return true
		}
	}
	return false
}
