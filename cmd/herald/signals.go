package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// holderSignals are the signals that, besides SIGINT and SIGTERM, stop run
// and lock the way SIGTERM does: the command is stopped and ownership given
// back before herald exits. SIGHUP comes when the terminal closes or an SSH
// connection drops; left to its default it would end herald without a
// release, and the group would stay owned by nobody alive for a whole
// session timeout. SIGQUIT (Ctrl-\) would do the same after a stack dump.
var holderSignals = []os.Signal{syscall.SIGHUP, syscall.SIGQUIT}

// holderContext is ctx, also cancelled, with a signalCause, by the first of
// holderSignals. A signal herald was started with ignored (nohup) stays
// ignored. stop restores the signals' previous behaviour.
//
// Standard error gone (the reader of `herald run ... 2>&1 | tee log`
// died) is taken as a SIGHUP is: the first log line written to it then
// ended herald with SIGPIPE, leaving its node to a dead process for a
// session timeout, and its watchdog, writing there too, before it stopped
// the command. (Go does so even when herald was started with SIGPIPE
// ignored, as systemd starts services.) So SIGPIPE is caught, and a log
// line that finds the pipe broken (logs) cancels ctx with SIGPIPE as the
// cause. A SIGPIPE from any other write (a connection reset) is left to
// that write's error.
func holderContext(ctx context.Context, logs *logPipe) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	var sigs []os.Signal
	for _, s := range holderSignals {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	ctx, unforce := forceContext(ctx, append([]os.Signal{os.Interrupt, syscall.SIGTERM}, sigs...))
	pipe := make(chan os.Signal, 1) // never read: Notify does not block
	if logs != nil {
		signal.Notify(pipe, syscall.SIGPIPE)
		logs.onBroken(func() { cancel(signalCause{syscall.SIGPIPE}) })
	}
	if len(sigs) == 0 { // Notify with no signals would take them all
		return ctx, func() {
			signal.Stop(pipe)
			unforce()
			cancel(nil)
		}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(signalCause{s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		signal.Stop(pipe)
		unforce()
		close(done)
		cancel(nil)
	}
}

// forceKey is the context key of the channel forceContext closes.
type forceKey struct{}

// forceContext is ctx carrying a channel (forced) closed by the second of
// sigs herald receives: the first stops the command with its whole
// --grace; a second (Ctrl-C again) has it killed at once. Before, the
// second went unheard, and a user had to kill -9 herald, leaving its node
// for a session timeout. stop ends the listening.
func forceContext(ctx context.Context, sigs []os.Signal) (context.Context, func()) {
	force, done := make(chan struct{}), make(chan struct{})
	ch := make(chan os.Signal, len(sigs))
	signal.Notify(ch, sigs...)
	go func() {
		for n := 0; n < 2; n++ {
			select {
			case <-ch:
			case <-done:
				return
			}
		}
		close(force)
	}()
	return context.WithValue(ctx, forceKey{}, (<-chan struct{})(force)), func() {
		signal.Stop(ch)
		close(done)
	}
}

// forced is the channel forceContext put in ctx, or nil.
func forced(ctx context.Context) <-chan struct{} {
	f, _ := ctx.Value(forceKey{}).(<-chan struct{})
	return f
}
