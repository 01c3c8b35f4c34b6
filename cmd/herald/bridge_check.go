package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkherald/herald/sinks/natssink"
)

// newBridgeCheckCmd is `herald bridge check`: a readiness probe for
// container health checks, so images need no curl or wget.
func newBridgeCheckCmd(a *app) *cobra.Command {
	var url string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Exit 0 when a running bridge says it is ready (for health checks)",
		Long: `check asks a bridge's /readyz and exits 0 when it answers 200 (connected to
ZooKeeper, active or standby, no group unknown, every sink healthy), else 1
with the reasons it gave. It prints the bridge's role, its shard and how many
groups it observes, e.g. "ready: active, shard 0/2, 5012 groups". A URL
without a path gets /readyz; any other answer than the /readyz JSON (the
live page, /healthz, /metrics) is refused.`,
		Example: `  herald bridge check --url http://127.0.0.1:9090/readyz
  herald bridge check --url http://127.0.0.1:9090`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := readyzURL(url)
			if err != nil {
				return err
			}
			shown := natssink.Redact(u) // a proxy's basic-auth password stays out of health-check logs
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return usageErr("--url %q: %v", natssink.Redact(url), err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("bridge not reachable at %s: %w", shown, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("bridge not ready (%s): %s", resp.Status, strings.TrimSpace(string(body)))
			}
			line, ok := readyLine(body)
			if !ok {
				// The live page, /healthz and /metrics answer 200 too,
				// whatever the bridge's state: only /readyz says ready.
				return fmt.Errorf("%s answered 200 but is not a bridge's /readyz (no JSON with \"ready\": true); give the /readyz URL, e.g. --url http://127.0.0.1:9090/readyz", shown)
			}
			fmt.Fprintln(cmd.OutOrStdout(), line)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:9090/readyz", "the bridge's /readyz URL (a URL without a path gets /readyz)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	return cmd
}

// readyzURL is --url checked, with /readyz appended when it has no path
// (the bridge's base address, which serves the live page).
func readyzURL(raw string) (string, error) {
	if !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") {
		return "", usageErr("--url %q: want an http:// or https:// URL", natssink.Redact(raw))
	}
	u, err := neturl.Parse(raw)
	if err != nil || u.Host == "" {
		return "", usageErr("--url %q: want http://HOST:PORT/readyz", natssink.Redact(raw))
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/readyz"
	}
	return u.String(), nil
}

// readyLine says what a ready bridge's /readyz body tells: its role, its
// shard and how many groups it observes. ok is false when body is not a
// ready bridge's /readyz.
func readyLine(body []byte) (line string, ok bool) {
	var st struct {
		Ready      *bool  `json:"ready"`
		Role       string `json:"role"`
		Shard      string `json:"shard"`
		GroupCount int    `json:"group_count"`
	}
	if json.Unmarshal(body, &st) != nil || st.Ready == nil || !*st.Ready || st.Role == "" {
		return "", false
	}
	shard := "all groups"
	if st.Shard != "" {
		shard = "shard " + st.Shard
	}
	groups := fmt.Sprintf("%d groups", st.GroupCount)
	if st.GroupCount == 1 {
		groups = "1 group"
	}
	return fmt.Sprintf("ready: %s, %s, %s", st.Role, shard, groups), true
}
