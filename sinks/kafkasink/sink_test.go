package kafkasink

import (
	"context"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

func TestConformance(t *testing.T) {
	c := kafkatest.Start(t)
	sinktest.Run(t, sinktest.Harness{
		New: func(t *testing.T) publish.Sink {
			s, err := New(testConfig(t, c))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Read: func(t *testing.T, ctx context.Context, s publish.Sink, min int) []publish.Event {
			st, err := Events(ctx, s.(*Sink).Config(), "", Unfiltered())
			if err != nil {
				t.Fatalf("follow events: %v", err)
			}
			defer st.Close()
			return collect(ctx, st, min)
		},
	})
}

func TestWriteAfterFailedConnectFails(t *testing.T) {
	c := kafkatest.Start(t)
	s, err := New(testConfig(t, c))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Write(ctx, sinktest.Events("x", 1, 1)); err == nil {
		t.Fatal("Write before Connect succeeded")
	}
}
