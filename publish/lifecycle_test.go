package publish

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestCloseDrainsWithinBound(t *testing.T) {
	s := newMem("drain")
	p, err := New([]Sink{s}, WithBatchSize(16))
	if err != nil {
		t.Fatal(err)
	}
	// Not running yet: everything queues, and Close must still drain it.
	evs := seq("/drain/g", 1000, time.Now())
	if err := p.Publish(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	checkOrder(t, s.stored(), []string{"/drain/g"}, 1000)
	if st := p.Stats().Sinks["drain"]; st.Backlog != 0 || st.Delivered != 1000 {
		t.Fatalf("after Close: %+v", st)
	}
	if !s.closed {
		t.Fatal("Close did not close the sink")
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatalf("Run after Close = %v, want nil (already done)", err)
	}
}

func TestRunCancelStopsAndRefuses(t *testing.T) {
	s := newMem("cancel")
	p, err := New([]Sink{s})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(ctx) }()
	waitFor(t, 5*time.Second, "Run started", func() bool { return p.running.Load() })
	if err := p.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Run = %v, want ErrRunning", err)
	}
	cancel()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if err := p.Publish(context.Background(), seq("/cancel/g", 1, time.Now())...); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Run ended = %v, want ErrClosed", err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

type deafSink struct {
	*memSink
	release chan struct{}
}

func (s deafSink) Write(ctx context.Context, batch []Event) error {
	<-s.release
	return s.memSink.Write(ctx, batch)
}

func (s deafSink) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connected
}

func TestCloseReportsStuckSink(t *testing.T) {
	old := stopGrace
	stopGrace = 20 * time.Millisecond
	defer func() { stopGrace = old }()
	s := deafSink{newMem("deaf"), make(chan struct{})}
	p, err := New([]Sink{s})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Run(context.Background()) }()
	if err := p.Publish(context.Background(), seq("/deaf/g", 3, time.Now())...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "write in progress", func() bool { return p.Stats().Sinks["deaf"].Backlog == 3 && s.busy() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = p.Close(ctx)
	close(s.release) // let the worker go, so nothing leaks
	var ue *UndeliveredError
	if !errors.As(err, &ue) || ue.Left["deaf"] != 3 || len(ue.Stuck) != 1 || ue.Stuck[0] != "deaf" {
		t.Fatalf("Close = %v, want 3 left and deaf reported stuck", err)
	}
}
