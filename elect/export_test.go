package elect

import "time"

// SetRecheckEvery sets how often a watching waiter looks at its nodes
// without a watch, until the returned function restores it.
func SetRecheckEvery(d time.Duration) (restore func()) {
	old := recheckEvery.Swap(int64(d))
	return func() { recheckEvery.Store(old) }
}
