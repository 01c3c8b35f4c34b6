package publish

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkPipeline measures events per second from Publish to the
// acknowledgment of every in-memory sink.
func BenchmarkPipeline(b *testing.B) {
	for _, sinks := range []int{1, 4} {
		b.Run(fmt.Sprintf("sinks=%d", sinks), func(b *testing.B) {
			var ss []Sink
			var mems []*memSink
			for i := 0; i < sinks; i++ {
				m := newMem(fmt.Sprintf("m%d", i))
				mems = append(mems, m)
				ss = append(ss, m)
			}
			p, err := New(ss, WithBacklog(1<<30))
			if err != nil {
				b.Fatal(err)
			}
			go func() { _ = p.Run(context.Background()) }()
			evs := seq("/bench/g", 1024, time.Now())
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.Publish(context.Background(), evs[i%len(evs)]); err != nil {
					b.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := p.Close(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			for _, m := range mems {
				if m.count() != b.N {
					b.Fatalf("%s stored %d of %d", m.name, m.count(), b.N)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
