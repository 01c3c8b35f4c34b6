package elect

import (
	"context"
	"encoding/json"

	"github.com/go-zookeeper/zk"
)

// groupMark is the data herald gives a group node it creates itself
// (CreateParents): which recipe the group holds, so that an observer that
// finds the group empty still knows a lock from an election. Nobody
// watches a group node's data, so it fires no waiter's watch; herald never
// writes the data of a group node it did not create.
type groupMark struct {
	Herald int    `json:"herald"`
	Recipe Recipe `json:"recipe"`
}

func markData(r Recipe) []byte {
	b, _ := json.Marshal(groupMark{Herald: 1, Recipe: r})
	return b
}

// readGroupRecipe reads herald's mark on a group node; false when the node
// carries none (another client made it) or cannot be read.
func readGroupRecipe(ctx context.Context, conn *zk.Conn, group string) (Recipe, bool) {
	b, _, err := call2(ctx, func() ([]byte, *zk.Stat, error) { return conn.Get(group) })
	if err != nil {
		return "", false
	}
	var m groupMark
	if json.Unmarshal(b, &m) != nil || m.Herald == 0 || m.Recipe != RecipeElection && m.Recipe != RecipeLock {
		return "", false
	}
	return m.Recipe, true
}
