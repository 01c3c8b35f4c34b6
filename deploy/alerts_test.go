package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// requirePromtool finds Debian's promtool (package prometheus); missing,
// it fails the test with HERALD_REQUIRE_SERVERS=1 and skips it otherwise.
func requirePromtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	msg := "promtool not on PATH: apt-get install -y prometheus (make deps does)"
	if os.Getenv("HERALD_REQUIRE_SERVERS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// The alert rules parse, and fire (or stay quiet) on the series a bridge
// exports, as alerts_test.yml says.
func TestAlertRules(t *testing.T) {
	promtool := requirePromtool(t)
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Every metric the rules use is one herald exports: a renamed metric
// must not leave an alert that can never fire.
func TestAlertRulesUseHeraldsMetrics(t *testing.T) {
	rules, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var code strings.Builder
	for _, dir := range []string{"../publish", "../publish/bridge"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			code.Write(b)
		}
	}
	names := regexp.MustCompile(`herald_[a-z_]+`).FindAllString(string(rules), -1)
	if len(names) < 5 {
		t.Fatalf("found only %v in alerts.yml", names)
	}
	for _, n := range names {
		if !strings.Contains(code.String(), `"`+n+`"`) {
			t.Errorf("alerts.yml uses %s, which herald does not export", n)
		}
	}
}
