// Package browsertest drives Debian's headless Chromium from tests (through
// chromedp): herald's pages are checked in a real browser, not parsed.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zkherald/herald/internal/zkserver/zktest"
)

// Binaries are where a browser is looked for, Debian's first.
var Binaries = []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"}

// Find returns the browser's path, or "" when none is installed.
func Find() string {
	for _, b := range Binaries {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	return ""
}

// New starts a headless browser for t and returns a context to run
// chromedp actions in; the browser ends with the test. Without a browser
// the test fails when HERALD_REQUIRE_SERVERS=1 (make test, CI) and is
// skipped otherwise.
func New(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	bin := Find()
	if bin == "" {
		if os.Getenv(zktest.RequireEnv) == "1" {
			t.Fatalf("no Chromium found (%v): install Debian's chromium package (make deps does)", Binaries)
		}
		t.Skipf("no Chromium found (%v); set %s=1 to fail instead of skipping", Binaries, zktest.RequireEnv)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // tests run as root in containers
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	return ctx
}
