package elect

import "time"

// Per-group state keeps its moments as unix nanoseconds (0: none), not
// as time.Time: 8 bytes where a time.Time takes 24, one of them a
// *Location the garbage collector scans, and ObserveMany keeps several
// per group for 100,000 groups. Most of them come from moments the
// session keeps the same way (Session.Answered, vouchedAsOf), wall clock
// only already; a read's send time (time.Now) loses its monotonic
// reading, which tells only across a step of the wall clock, when the
// session's own moments are off by as much.

// unixNs is t as unix nanoseconds, 0 for the zero time.
func unixNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// nsTime is the moment unix nanoseconds ns stand for, the zero time for 0.
func nsTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
