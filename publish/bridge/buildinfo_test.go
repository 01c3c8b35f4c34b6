package bridge

import (
	"context"
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/zkherald/herald/publish"
)

// TestBuildInfoMetric: /metrics has herald_build_info = 1 with the
// version, revision and Go version the program set, or the binary's own.
func TestBuildInfoMetric(t *testing.T) {
	scrape := func() string {
		t.Helper()
		b, err := New(Config{Servers: []string{"127.0.0.1:1"}, Watch: []string{"/x"}, Sinks: []publish.Sink{nopSink{}}})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		b.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		return string(body)
	}
	if got := scrape(); !strings.Contains(got, `herald_build_info{goversion="`+runtime.Version()+`",revision="`) ||
		!strings.Contains(got, `version="`+ReadBuild().Version+`"} 1`) {
		t.Errorf("no herald_build_info of the binary in:\n%s", grepLines(got, "herald_build_info"))
	}
	t.Cleanup(func() {
		buildMu.Lock()
		build = nil
		buildMu.Unlock()
	})
	SetBuild(Build{Version: "v1.2.3", Revision: "abc123", Modified: true, GoVersion: "go1.99"})
	want := `herald_build_info{goversion="go1.99",revision="abc123+dirty",version="v1.2.3"} 1`
	if got := scrape(); !strings.Contains(got, want) {
		t.Errorf("want %s in:\n%s", want, grepLines(got, "herald_build_info"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

type nopSink struct{}

func (nopSink) Name() string                                 { return "nop" }
func (nopSink) Connect(context.Context) error                { return nil }
func (nopSink) Write(context.Context, []publish.Event) error { return nil }
func (nopSink) Close() error                                 { return nil }
