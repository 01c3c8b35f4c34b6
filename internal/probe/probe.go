// Package probe runs a sink's background health check: one goroutine,
// started once, and stopped and waited for, so that a closed sink leaves
// nothing running.
package probe

import "context"

// Loop is a background check; the zero Loop runs nothing. It is not safe
// for concurrent use: callers start and stop it under their own lock.
type Loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs check in a goroutine of its own, with a context that Stop
// ends, unless the loop already runs.
func (l *Loop) Start(check func(ctx context.Context)) {
	if l.done != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	l.cancel, l.done = cancel, done
	go func() {
		defer close(done)
		check(ctx)
	}()
}

// Stop ends the check's context and waits for it to return; the loop can
// be started again after.
func (l *Loop) Stop() {
	if l.done == nil {
		return
	}
	l.cancel()
	<-l.done
	l.cancel, l.done = nil, nil
}
