package elect

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
)

// writeWaits are the callers waiting for a request of theirs to be written
// to the session's connection (see Session.afterWrite).
type writeWaits struct {
	n     atomic.Int32 // len(waits), read without the lock on every write
	mu    sync.Mutex
	waits []*writeWait
}

// writeWait waits for a request carrying marker.
type writeWait struct {
	marker []byte
	done   chan struct{}
}

// afterWrite returns a channel closed once a request carrying marker (a
// herald id, which only the create of one node carries) has been written
// to the session's connection, and a function that stops the wait. The
// client writes its requests one at a time and in order, on one
// connection, and the server answers a session's requests in that order:
// a request sent once the channel is closed is answered after the one that
// carried marker, without waiting for that one's reply.
func (s *Session) afterWrite(marker string) (written <-chan struct{}, stop func()) {
	w := &writeWait{marker: []byte(marker), done: make(chan struct{})}
	ws := &s.writes
	ws.mu.Lock()
	ws.waits = append(ws.waits, w)
	ws.n.Store(int32(len(ws.waits)))
	ws.mu.Unlock()
	return w.done, func() { ws.drop(w) }
}

// wrote closes the waits whose marker request p carries.
func (ws *writeWaits) wrote(p []byte) {
	if ws.n.Load() == 0 {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.waits = slices.DeleteFunc(ws.waits, func(w *writeWait) bool {
		if bytes.Contains(p, w.marker) {
			close(w.done)
			return true
		}
		return false
	})
	ws.n.Store(int32(len(ws.waits)))
}

func (ws *writeWaits) drop(w *writeWait) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.waits = slices.DeleteFunc(ws.waits, func(x *writeWait) bool { return x == w })
	ws.n.Store(int32(len(ws.waits)))
}
