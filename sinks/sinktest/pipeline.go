package sinktest

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/publish"
)

// RunPipeline makes a pipeline over sinks with opts and runs it until the test
// ends, then closes it (draining for up to 5s). Sinks closed by the test's
// own cleanup, registered before RunPipeline, are closed after the pipeline.
func RunPipeline(t testing.TB, sinks []publish.Sink, opts ...publish.Option) *publish.Pipeline {
	t.Helper()
	p, err := publish.New(sinks, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = p.Close(cctx)
		ccancel()
		cancel()
		<-done
	})
	return p
}
