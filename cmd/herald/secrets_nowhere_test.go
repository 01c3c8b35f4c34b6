package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/internal/kafkatest"
	"github.com/zkherald/herald/internal/natsserver"
)

// TestRefusedSecretsAppearNowhere: a bridge whose NATS or Kafka refuses
// its password, logging in to ZooKeeper with digest credentials, at
// --log-level debug and with --http, says that the sink refused it, in
// its log, on the live page, /metrics, /readyz and `herald bridge check`
// while it retries, and in its last error, and repeats none of the
// secrets anywhere. The tests before looked at one sink's log, or at the
// check of a URL, one at a time.
func TestRefusedSecretsAppearNowhere(t *testing.T) {
	zkFl := zkFlags(t)
	openTestRoot(t)
	secrets := []string{"Zk-S3cret-771", "Nats-S3cret-772", "Kafka-S3cret-773"}
	dir := t.TempDir()
	auth, kpw := filepath.Join(dir, "zk-auth"), filepath.Join(dir, "kafka-pw")
	if err := os.WriteFile(auth, []byte("herald-sec:"+secrets[0]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kpw, []byte(secrets[2]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nats := natsserver.Start(t, natsserver.WithUser("alice", "right-nats"))
	kafka := kafkatest.Start(t, kafkatest.SASL(kafkatest.ScramSHA256, "kuser", "right-kafka"))
	for _, c := range []struct {
		sink    []string
		refusal string
	}{
		{[]string{"--nats", strings.Replace(nats.URL(), "nats://", "nats://alice:"+secrets[1]+"@", 1)}, "the server refused our credentials"},
		{[]string{"--kafka", strings.Join(kafka.Addrs(), ","), "--kafka-sasl", "SCRAM-SHA-256", "--kafka-user", "kuser", "--kafka-password-file", kpw}, "check the user name, password and mechanism"},
	} {
		args := append(append([]string{"--zk-auth-file", auth, "--log-level", "debug", "bridge", "--watch", uniq(t), "--http", "127.0.0.1:0"}, c.sink...), zkFl...)
		shown := refusedBridgeShows(t, args, c.refusal)
		for _, s := range secrets {
			if i := strings.Index(shown, s); i >= 0 {
				t.Errorf("%s: the secret %s is shown: ...%s...", c.sink[0], s, shown[max(0, i-300):min(len(shown), i+100)])
			}
		}
	}
}

// refusedBridgeShows runs a bridge of args whose sink refuses it (saying
// refusal) until it gives up, and returns all it showed meanwhile: its
// output, its HTTP pages and what bridge check said of it.
func refusedBridgeShows(t *testing.T, args []string, refusal string) string {
	t.Helper()
	br := start(t, nil, args...)
	addr := waitMatch(t, br, regexp.MustCompile(`msg="serving HTTP" addr=(\S+)`), 30*time.Second)
	br.waitOutput(t, refusal, 30*time.Second)
	var shown strings.Builder
	for _, p := range []string{"/", "/metrics", "/readyz", "/healthz"} {
		shown.WriteString(httpGet(t, "http://"+addr+p))
	}
	out, stderr, code := heraldRun(t, nil, "bridge", "check", "--url", "http://"+addr+"/readyz")
	if code == 0 {
		t.Errorf("%s: bridge check passes a bridge whose sink refuses it: %s", args[len(args)-1], out)
	}
	shown.WriteString(out + stderr)
	if code := br.wait(t, 60*time.Second); code == 0 || !strings.Contains(br.out.String(), "herald: bridge: sink unreachable") {
		t.Errorf("the bridge refused by its sink: exit %d, want it to give up naming the sink:\n%s", code, br.out)
	}
	return shown.String() + br.out.String()
}
