package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
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
groups it observes, e.g. "ready: active, shard 0/2, 5012 groups".`,
		Example: `  herald bridge check --url http://127.0.0.1:9090/readyz`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
				return usageErr("--url %q: want an http:// or https:// URL", url)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return usageErr("--url %q: %v", url, err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("bridge not reachable at %s: %w", url, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("bridge not ready (%s): %s", resp.Status, strings.TrimSpace(string(body)))
			}
			fmt.Fprintln(cmd.OutOrStdout(), readyLine(body))
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:9090/readyz", "the bridge's /readyz URL")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	return cmd
}

// readyLine says what a ready bridge's /readyz body tells: its role, its
// shard and how many groups it observes.
func readyLine(body []byte) string {
	var st struct {
		Role       string `json:"role"`
		Shard      string `json:"shard"`
		GroupCount int    `json:"group_count"`
	}
	if json.Unmarshal(body, &st) != nil || st.Role == "" {
		return "ready"
	}
	shard := "all groups"
	if st.Shard != "" {
		shard = "shard " + st.Shard
	}
	groups := fmt.Sprintf("%d groups", st.GroupCount)
	if st.GroupCount == 1 {
		groups = "1 group"
	}
	return fmt.Sprintf("ready: %s, %s, %s", st.Role, shard, groups)
}
