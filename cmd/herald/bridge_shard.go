package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish/bridge"
)

// newBridgeShardOfCmd is `herald bridge shard-of`: which of N shard bridges
// observes a group, computed as the bridges do, without ZooKeeper.
func newBridgeShardOfCmd(*app) *cobra.Command {
	var shards int
	cmd := &cobra.Command{
		Use:   "shard-of PATH...",
		Short: "Print which shard (--shard K/N) observes each group path",
		Long: `shard-of prints, for each group path, the --shard K/N of the bridges that
observe it when the groups are split into N shards: K is the last 8 bytes of
the MD5 of the path, read as a big-endian number, modulo N (Prometheus'
hashmod). It asks no server.`,
		Example: `  herald bridge shard-of --shards 2 /locks/orders /services/a
  1/2	/locks/orders
  1/2	/services/a`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("shards") && strings.TrimSpace(os.Getenv("HERALD_SHARDS")) == "" {
				return usageErr("--shards is required: the number of shards the bridges run as (N of their --shard K/N), e.g. herald bridge shard-of --shards 2 /locks/orders")
			}
			if shards < 1 {
				return usageErr("--shards %d: give the number of shards the bridges run as, at least 1", shards)
			}
			if len(args) == 0 {
				return usageErr("give at least one group path, e.g. herald bridge shard-of --shards %d /locks/orders", shards)
			}
			for _, p := range args {
				if err := elect.ValidatePath(p); err != nil {
					return usageErr("%q: %v", p, err)
				}
			}
			for _, p := range args {
				if _, err := fmt.Fprintf(cmd.OutOrStdout(), "%d/%d\t%s\n", bridge.ShardOf(p, shards), shards, p); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&shards, "shards", 0, "N, the number of shards the bridges run as (their --shard K/N)")
	return cmd
}
