package kafkatest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

func produce(ctx context.Context, cl *kgo.Client, topic, value string) error {
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
}

func consumeN(t *testing.T, addrs []string, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %v, want %d records: %v", got, n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func TestStopRestartKeepsPortsAndData(t *testing.T) {
	c := Start(t, Topic("t-restart", 1))
	addrs := c.Addrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := produce(ctx, cl, "t-restart", "before"); err != nil {
		t.Fatalf("produce before stop: %v", err)
	}

	c.Stop()
	if conn, err := net.DialTimeout("tcp", addrs[0], time.Second); err == nil {
		conn.Close()
		t.Fatalf("broker %s still accepts connections after Stop", addrs[0])
	}

	c.Restart(t)
	if got := c.Addrs(); got[0] != addrs[0] {
		t.Fatalf("restarted on %v, want %v", got, addrs)
	}
	if err := produce(ctx, cl, "t-restart", "after"); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	got := consumeN(t, addrs, "t-restart", 2)
	if got[0] != "before" || got[1] != "after" {
		t.Fatalf("after restart the topic holds %q, want [before after]", got)
	}
}

func TestSASL(t *testing.T) {
	c := Start(t, SASL(Plain, "alice", "wonder"), SASL(ScramSHA512, "bob", "builder"), Topic("t-sasl", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	try := func(opt kgo.Opt) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), opt, kgo.RequestRetries(0),
			kgo.ProduceRequestTimeout(2*time.Second), kgo.RecordDeliveryTimeout(2*time.Second))
		if err != nil {
			return err
		}
		defer cl.Close()
		return produce(ctx, cl, "t-sasl", "x")
	}
	if err := try(kgo.SASL(plain.Auth{User: "alice", Pass: "wonder"}.AsMechanism())); err != nil {
		t.Fatalf("PLAIN with the right password: %v", err)
	}
	if err := try(kgo.SASL(scram.Auth{User: "bob", Pass: "builder"}.AsSha512Mechanism())); err != nil {
		t.Fatalf("SCRAM-SHA-512 with the right password: %v", err)
	}
	if err := try(kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism())); err == nil {
		t.Fatal("PLAIN with a wrong password was accepted")
	}
	if err := try(kgo.ClientID("anonymous")); err == nil {
		t.Fatal("a client without SASL was accepted")
	}
}
