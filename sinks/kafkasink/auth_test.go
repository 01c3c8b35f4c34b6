package kafkasink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/testtls"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/sinktest"
)

func TestSASL(t *testing.T) {
	c := kafkatest.Start(t,
		kafkatest.SASL(kafkatest.Plain, "plainuser", "plain-secret"),
		kafkatest.SASL(kafkatest.ScramSHA256, "scram256", "s256-secret"),
		kafkatest.SASL(kafkatest.ScramSHA512, "scram512", "s512-secret"))
	for _, tc := range []struct {
		mech, user, pass string
		ok               bool
	}{
		{Plain, "plainuser", "plain-secret", true},
		{ScramSHA256, "scram256", "s256-secret", true},
		{ScramSHA512, "scram512", "s512-secret", true},
		{Plain, "plainuser", "wrong-secret", false},
		{ScramSHA256, "scram256", "wrong-secret", false},
		{ScramSHA512, "nobody", "wrong-secret", false},
	} {
		t.Run(tc.mech+"/"+tc.pass, func(t *testing.T) {
			cfg := testConfig(t, c)
			cfg.SASL = &SASL{Mechanism: tc.mech, User: tc.user, Password: tc.pass}
			s, err := tryConnect(t, cfg, 5*time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if tc.ok {
				if err != nil {
					t.Fatalf("connect: %v", err)
				}
				if err := s.Write(ctx, sinktest.Events("sasl", 1, 2)); err != nil {
					t.Fatalf("write: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrAuth) {
				t.Fatalf("connect with bad credentials: %v, want ErrAuth", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.Addrs()[0]) || !strings.Contains(msg, tc.user) || !strings.Contains(msg, tc.mech) {
				t.Fatalf("error %q should name the broker, user and mechanism", msg)
			}
			if strings.Contains(msg, tc.pass) {
				t.Fatalf("error %q leaks the password", msg)
			}
		})
	}
}

func TestUnreachableNamesTheBrokers(t *testing.T) {
	c := kafkatest.Start(t)
	cfg := testConfig(t, c)
	c.Stop()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = s.Connect(ctx)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), c.Addrs()[0]) {
		t.Fatalf("connect to a stopped broker: %v, want ErrUnreachable naming %s", err, c.Addrs()[0])
	}
}

func TestOwnersTopicMustBeCompacted(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Topic("plain-owners", 1))
	cfg := testConfig(t, c)
	cfg.OwnersTopic = "plain-owners"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Connect(ctx); !errors.Is(err, ErrTopic) || !strings.Contains(err.Error(), "cleanup.policy") {
		t.Fatalf("connect with a non-compacted owners topic: %v, want ErrTopic about cleanup.policy", err)
	}
}

func TestValidate(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no brokers":      {},
		"no port":         {Brokers: []string{"kafka"}},
		"same topics":     {Brokers: []string{"k:9092"}, EventsTopic: "x", OwnersTopic: "x"},
		"slow batches":    {Brokers: []string{"k:9092"}, BatchTimeout: time.Second},
		"isr > replicas":  {Brokers: []string{"k:9092"}, ReplicationFactor: 1, MinInSyncReplicas: 2},
		"bad mechanism":   {Brokers: []string{"k:9092"}, SASL: &SASL{Mechanism: "GSSAPI", User: "u"}},
		"no user":         {Brokers: []string{"k:9092"}, SASL: &SASL{Mechanism: Plain}},
		"no password":     {Brokers: []string{"k:9092"}, SASL: &SASL{Mechanism: Plain, User: "u"}},
		"cert but no key": {Brokers: []string{"k:9092"}, TLS: &TLS{CertFile: "c.pem"}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: New: %v, want ErrBadConfig", name, err)
		}
	}
	if _, err := New(Config{Brokers: []string{"k:9092"}, TLS: &TLS{CAFile: "/nonexistent/ca.pem"}}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("missing CA file: %v, want ErrBadConfig", err)
	}
	// A SCRAM password with a character SASLprep refuses (a line break
	// left by a variable, a tab from a file) is a bad configuration that
	// does not quote it; the SCRAM library's own error did.
	for _, pw := range []string{"wonder-secret\n", "won\tder-secret"} {
		_, err := New(Config{Brokers: []string{"k:9092"}, SASL: &SASL{Mechanism: ScramSHA512, User: "alice", Password: pw}})
		if !errors.Is(err, ErrBadConfig) || strings.Contains(err.Error(), "der-secret") || !strings.Contains(err.Error(), "alice") {
			t.Errorf("SCRAM password %q: %v; want ErrBadConfig naming the user, not the password", pw, err)
		}
	}
	s := SASL{Mechanism: Plain, User: "u", Password: "hunter2"}
	if strings.Contains(s.String(), "hunter2") || strings.Contains(s.LogValue().String(), "hunter2") {
		t.Error("SASL's String or LogValue shows the password")
	}
}

func TestOwnerChangesSkipsStaleAndSuccessorLosses(t *testing.T) {
	a := &publish.Participant{ID: "a", Node: "n_1"}
	b := &publish.Participant{ID: "b", Node: "n_2"}
	ev := func(typ publish.Type, owner, prev *publish.Participant, term, zxid int64) publish.Event {
		return publish.Event{Type: typ, Group: "/g", Recipe: elect.RecipeElection, Owner: owner, Previous: prev,
			Term: term, Zxid: zxid, Source: "t"}.WithID()
	}
	// Known from an earlier batch: /g reached term 20.
	reached := map[string]ownerState{"/g": {term: 20}}
	got, _ := ownerChanges([]publish.Event{ev(publish.LeaderLost, nil, a, 10, 15)}, reached)
	if len(got) != 0 {
		t.Fatalf("a loss of term 10 after term 20 wrote %v", got)
	}
	got, _ = ownerChanges([]publish.Event{ev(publish.LeaderLost, b, a, 20, 25)}, reached)
	if len(got) != 0 {
		t.Fatalf("a loss naming a successor wrote %v; the successor's event writes the owner", got)
	}
	got, terms := ownerChanges([]publish.Event{
		ev(publish.LeaderElected, b, nil, 30, 30), ev(publish.LeaderReady, b, nil, 30, 31),
	}, reached)
	if len(got) != 1 || got[0].Type != publish.LeaderReady || terms["/g"].term != 30 || !terms["/g"].ready || reached["/g"].term != 20 {
		t.Fatalf("elected+ready coalesced to %v (terms %v, reached %v), want the ready alone, term 30, reached unchanged", got, terms, reached)
	}
	got, _ = ownerChanges([]publish.Event{ev(publish.LeaderLost, nil, nil, 0, 40)}, reached)
	if len(got) != 1 {
		t.Fatalf("a snapshot 'no owner at zxid 40' after term 20 wrote %v, want a tombstone", got)
	}
}

// TLS against brokers that accept only TLS and require a client
// certificate: the sink with the CA and a client certificate writes; one
// without TLS, or without a client certificate, or trusting another CA,
// gets an error that names the brokers.
func TestTLS(t *testing.T) {
	files, err := testtls.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := testtls.Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.ServerCert, files.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	clients := x509.NewCertPool()
	clients.AppendCertsFromPEM(pem)
	c := kafkatest.Start(t, kafkatest.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: clients,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}))
	for _, tc := range []struct {
		name string
		tls  *TLS
		ok   bool
		want error  // the error class
		hint string // what the error tells the user to do
	}{
		{"ca-and-client-cert", &TLS{CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey}, true, nil, ""},
		{"no-tls", nil, false, ErrUnreachable, "turn TLS on"},
		{"no-client-cert", &TLS{CAFile: files.CA}, false, ErrTLS, "--kafka-cert and --kafka-key"},
		{"other-ca", &TLS{CAFile: other.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey}, false, ErrTLS, "--kafka-ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, c)
			cfg.TLS = tc.tls
			s, err := tryConnect(t, cfg, 5*time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err == nil {
				err = s.Write(ctx, sinktest.Events("tls-"+tc.name, 1, 2))
			}
			if tc.ok {
				if err != nil {
					t.Fatalf("connect and write over TLS: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("connected and wrote without the right TLS settings")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), c.Addrs()[0]) || !strings.Contains(err.Error(), tc.hint) {
				t.Fatalf("error %q: want %v, naming the broker and saying %q", err, tc.want, tc.hint)
			}
		})
	}
}

// An owners topic that compacts and deletes (cleanup.policy=compact,delete)
// loses the only record of a group whose owner has not changed for
// retention.ms: refused as a topic that only deletes is, unless
// retention.ms is -1.
func TestOwnersTopicMustNotDeleteToo(t *testing.T) {
	c := kafkatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	policy := func(ms, bytes string) []string {
		return []string{"cleanup.policy", "compact,delete", "retention.ms", ms, "retention.bytes", bytes}
	}
	connect := topicsMade(t, ctx, testConfig(t, c), map[string][]string{
		"owners-cd": policy("60000", "-1"), "owners-cd-forever": policy("-1", "-1"), "owners-cd-bytes": policy("-1", "1000000"),
	}, func(cfg *Config, topic string) { cfg.OwnersTopic = topic })
	if err := connect("owners-cd"); !errors.Is(err, ErrTopic) || !strings.Contains(err.Error(), "retention.ms=60000") {
		t.Fatalf("connect with owners topic compact,delete: %v, want ErrTopic about retention.ms", err)
	}
	if err := connect("owners-cd-bytes"); !errors.Is(err, ErrTopic) || !strings.Contains(err.Error(), "retention.bytes=1000000") {
		t.Fatalf("connect with owners topic compact,delete and retention.bytes=1000000: %v, want ErrTopic about retention.bytes", err)
	}
	if err := connect("owners-cd-forever"); err != nil {
		t.Fatalf("connect with owners topic compact,delete and retention.ms=-1: %v", err)
	}
}

// TestPlainWithoutTLSWarns: SASL PLAIN over a plaintext connection sends
// the password as written; the sink and the readers say so when they
// start, without the password, and nothing else is warned of.
func TestPlainWithoutTLSWarns(t *testing.T) {
	for _, tc := range []struct {
		sasl *SASL
		tls  *TLS
		warn bool
	}{
		{&SASL{Mechanism: Plain, User: "u", Password: "pl4in-secret"}, nil, true},
		{&SASL{Mechanism: Plain, User: "u", Password: "pl4in-secret"}, &TLS{}, false},
		{&SASL{Mechanism: ScramSHA256, User: "u", Password: "pl4in-secret"}, nil, false},
		{nil, nil, false},
	} {
		var buf strings.Builder
		cfg := Config{Brokers: []string{"127.0.0.1:1"}, SASL: tc.sasl, TLS: tc.tls, Logger: slog.New(slog.NewTextHandler(&buf, nil))}
		if _, err := New(cfg); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, _ = Events(ctx, cfg, "")
		cancel()
		got := buf.String()
		if n := strings.Count(got, "without TLS sends the password unencrypted"); tc.warn && n != 2 || !tc.warn && n != 0 {
			t.Errorf("SASL %v, TLS %v: warned %d times, want %v for the sink and the reader:\n%s", tc.sasl, tc.tls, n, tc.warn, got)
		}
		if strings.Contains(got, "pl4in-secret") {
			t.Errorf("the warning shows the password:\n%s", got)
		}
	}
}

// TestBridgesTopicMustBeCompacted: a bridges topic made beforehand that
// deletes records by age drops the last heartbeat of a bridge that died,
// and readers then took its values for a bridge's that sends none, not
// judged (found by a review, for JetStream's bucket with a TTL). It is
// refused at start, as such an owners topic is; a compacted one is used.
func TestBridgesTopicMustBeCompacted(t *testing.T) {
	c := kafkatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	connect := topicsMade(t, ctx, testConfig(t, c), map[string][]string{
		"bridges-delete":  {"cleanup.policy", "delete", "retention.ms", "60000"},
		"bridges-compact": {"cleanup.policy", "compact", "retention.ms", "60000"},
	}, func(cfg *Config, topic string) { cfg.BridgesTopic = topic })
	if err := connect("bridges-delete"); !errors.Is(err, ErrTopic) || !errors.Is(err, publish.ErrSinkConfig) || !strings.Contains(err.Error(), "each bridge's last heartbeat") {
		t.Fatalf("connect with a bridges topic that deletes: %v, want a configuration error about its last heartbeats", err)
	}
	if err := connect("bridges-compact"); err != nil {
		t.Fatalf("connect with a compacted bridges topic: %v", err)
	}
}

// topicsMade creates, on cfg's brokers, each topic with its settings
// (config name, value, ...), and returns a function that connects a sink
// whose topic set names it, as set sets it, and reports its error.
func topicsMade(t *testing.T, ctx context.Context, cfg Config, topics map[string][]string, set func(*Config, string)) (connect func(string) error) {
	t.Helper()
	cl, tr, err := cfg.client()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	for topic, kv := range topics {
		var entries []kafka.ConfigEntry
		for i := 0; i+1 < len(kv); i += 2 {
			entries = append(entries, kafka.ConfigEntry{ConfigName: kv[i], ConfigValue: kv[i+1]})
		}
		res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
			Topic: topic, NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: entries,
		}}})
		if err != nil || res.Errors[topic] != nil {
			t.Fatalf("create %s: %v %v", topic, err, res.Errors)
		}
	}
	return func(topic string) error {
		cfg := cfg
		set(&cfg, topic)
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return s.Connect(ctx)
	}
}
