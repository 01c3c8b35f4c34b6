package elect

import (
	"testing"
	"time"
)

// StrangerMember listens at addr (127.0.0.1:0: any port) as a TLS
// server whose certificate no test trusts, and returns its address.
func StrangerMember(t testing.TB, addr string) string { return strangerMemberAt(t, addr) }

// SetRecheckEvery sets how often a watching waiter looks at its nodes
// without a watch, until the returned function restores it.
func SetRecheckEvery(d time.Duration) (restore func()) {
	old := recheckEvery.Swap(int64(d))
	return func() { recheckEvery.Store(old) }
}

// OnSessionLook has fn told of each look a ProveSessionEnd wait makes for
// its owner's session node, until the returned function restores it.
func OnSessionLook(fn func(prev string, seen bool)) (restore func()) {
	sessionLooked.Store(&fn)
	return func() { sessionLooked.Store(nil) }
}

// SessionNodeName is the session node of session id in its group's office.
func SessionNodeName(id int64) string { return sessionNodeName(id) }
