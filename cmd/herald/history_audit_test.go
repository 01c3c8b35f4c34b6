package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkherald/herald/sinks/audit"
)

// TestHistoryRefusesAFileThatIsNoAuditLog: --audit naming a file none of
// whose lines is a herald event (/etc/passwd, another program's JSON log)
// is an error naming the file, not "no events"; an empty log, and a log
// with a torn or corrupt line among herald's, read as before.
func TestHistoryRefusesAFileThatIsNoAuditLog(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, p := range []string{
		file("passwd", "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"),
		file("other.json", `{"level":"info","msg":"started"}`+"\n"+`{"level":"info","msg":"stopped"}`+"\n"),
	} {
		_, stderr, code := heraldRun(t, nil, "history", "--audit", p)
		if code != exitFailure || !strings.Contains(stderr, p) || !strings.Contains(stderr, "no herald audit records") || !strings.Contains(stderr, "--audit FILE") {
			t.Errorf("history --audit %s: exit %d, want %d naming the file as holding no herald records; stderr: %s", filepath.Base(p), code, exitFailure, stderr)
		}
	}
	if out, stderr, code := heraldRun(t, nil, "history", "--audit", file("empty.log", "")); code != 0 || !strings.Contains(out, "no leadership or lock events") {
		t.Errorf("an empty audit log: exit %d, want 0 and no events:\n%s%s", code, out, stderr)
	}

	g := uniq(t)
	log := filepath.Join(dir, "audit.log")
	as, err := audit.New(log)
	if err != nil {
		t.Fatal(err)
	}
	write(t, as, story(g)...)
	if err := as.Close(); err != nil {
		t.Fatal(err)
	}
	valid, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(valid), "\n")
	for name, text := range map[string]string{
		"torn last line":       string(valid) + `{"type":"leader_el`,
		"corrupt middle line":  lines[0] + "garbage\n" + strings.Join(lines[1:], ""),
		"only herald's events": string(valid),
	} {
		checkHistory(t, g, "--audit", file(strings.ReplaceAll(name, " ", "-")+".log", text))
	}
	if out, stderr, code := heraldRun(t, nil, "history", "/another/group", "--audit", log); code != 0 || !strings.Contains(out, "no leadership or lock events") {
		t.Errorf("a log with no events of the group asked for: exit %d, want 0 and no events:\n%s%s", code, out, stderr)
	}
}
