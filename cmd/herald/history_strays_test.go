package main

import (
	"os"
	"strings"
	"testing"

	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/sinks/audit"
)

// TestHistoryWarnsOfLogrotatesOtherNames: logrotate's own numbering
// (audit.log.1) and its dateext's default name (audit.log-20261129) lay
// beside the log, each holding an owner's tenure, and history read
// neither and said nothing, while it named audit.log.20261129. It names
// them now, saying to give each its own --audit, still without reading
// them as herald's rotations; given so, they are read and not named.
func TestHistoryWarnsOfLogrotatesOtherNames(t *testing.T) {
	g, path, mk := newStory(t)
	openLog(t, path, mk(publish.LeaderLost, nil, nil, 0, 5, true), mk(publish.LeaderElected, participant("alpha", 1), nil, 10, 10, false))
	var strays []string
	for i, name := range []string{path + ".1", path + "-20261129"} {
		if err := os.Rename(zuluLog(t, mk, i), name); err != nil {
			t.Fatal(err)
		}
		strays = append(strays, name)
	}
	out, stderr, code := heraldRun(t, nil, "history", g, "--audit", path)
	if code != 0 || !strings.Contains(out, "alpha") || strings.Contains(out, "zulu") {
		t.Fatalf("history beside logrotate's files: exit %d, want alpha alone:\n%s%s", code, out, stderr)
	}
	for _, s := range strays {
		if !strings.Contains(stderr, s) || !strings.Contains(stderr, "--audit") {
			t.Errorf("history does not name %s, nor say to give it its own --audit:\n%s", s, stderr)
		}
	}
	if strings.Contains(stderr, "missing between") {
		t.Errorf("history counts logrotate's files as herald's rotations:\n%s", stderr)
	}
	out, stderr, code = heraldRun(t, nil, "history", g, "--audit", path, "--audit", strays[0], "--audit", strays[1])
	if code != 0 || strings.Count(out, "zulu") != 2 || strings.Contains(stderr, "named by another rotation") {
		t.Errorf("history given logrotate's files with their own --audit: exit %d, want both zulus and no warning of them:\n%s%s", code, out, stderr)
	}
}

// openLog is an audit log at path holding events, left open until the
// test ends, as a running bridge's is.
func openLog(t *testing.T, path string, events ...publish.Event) {
	t.Helper()
	as, err := audit.New(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	write(t, as, events...)
}

// zuluLog is a closed audit log of its own holding zulu's whole tenure,
// the i'th of a test's (each a term and zxid on), for the test to lay
// beside another log under a name logrotate gives.
func zuluLog(t *testing.T, mk func(typ publish.Type, owner, prev *publish.Participant, term, zxid int64, snap bool) publish.Event, i int) string {
	t.Helper()
	z := participant("zulu", 5+i)
	return auditLog(t, mk(publish.LeaderElected, z, nil, int64(1+i), int64(1+i), false), mk(publish.LeaderLost, nil, z, int64(1+i), int64(2+i), false))
}

// TestHistoryWarnsOfLogrotatesCompressedFiles: logrotate compresses what
// it rotates in most of its configurations; audit.log.2.gz beside the log,
// holding an owner's tenure, was neither read nor named. history names it
// now, and says to decompress it for its own --audit.
func TestHistoryWarnsOfLogrotatesCompressedFiles(t *testing.T) {
	g, path, mk := newStory(t)
	openLog(t, path, mk(publish.LeaderLost, nil, nil, 0, 5, true), mk(publish.LeaderElected, participant("alpha", 1), nil, 10, 10, false))
	stray := path + ".2.gz"
	gzipFile(t, zuluLog(t, mk, 0), stray)
	out, stderr, code := heraldRun(t, nil, "history", g, "--audit", path)
	if code != 0 || !strings.Contains(out, "alpha") {
		t.Fatalf("history beside logrotate's compressed file: exit %d, want alpha:\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, stray) || !strings.Contains(stderr, "decompress") {
		t.Errorf("history does not name %s, nor say to decompress it for its own --audit:\n%s", stray, stderr)
	}
}
