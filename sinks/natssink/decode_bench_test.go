package natssink_test

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/zkherald/herald/sinks/natssink"
	"github.com/zkherald/herald/sinks/sinktest"
)

// BenchmarkDecode: what a consumer pays per event it receives.
func BenchmarkDecode(b *testing.B) {
	e := sinktest.Events(b.Name(), 1, 1)[0]
	m, err := natssink.Msg(e)
	if err != nil {
		b.Fatal(err)
	}
	in := &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := natssink.Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}
