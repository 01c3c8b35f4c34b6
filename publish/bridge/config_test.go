package bridge_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkherald/herald/elect"
	"github.com/zkherald/herald/publish"
	"github.com/zkherald/herald/publish/bridge"
	"github.com/zkherald/herald/sinks/audit"
)

func TestConfigValidate(t *testing.T) {
	sink, err := audit.New(t.TempDir() + "/a.log")
	if err != nil {
		t.Fatal(err)
	}
	ok := bridge.Config{Servers: []string{"zk:2181"}, Watch: []string{"/a"}, Sinks: []publish.Sink{sink}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	glob := ok
	glob.Discover = []string{"/svc"}
	glob.Recipes = elect.RecipeRules{"/svc/*/leader": elect.RecipeElection, "/?": elect.RecipeLock, "/a": elect.RecipeLock}
	if err := glob.Validate(); err != nil {
		t.Fatalf("a glob rule: %v", err)
	}
	everywhere := ok
	everywhere.Discover = []string{"/"}
	everywhere.Recipes = elect.RecipeRules{"/*/locks/*": elect.RecipeLock}
	if err := everywhere.Validate(); err != nil {
		t.Fatalf("a glob rule below the discover root /: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*bridge.Config)
		want string
	}{
		{"no servers", func(c *bridge.Config) { c.Servers = nil }, "no ZooKeeper servers"},
		{"server without port", func(c *bridge.Config) { c.Servers = []string{"zk"} }, "want host:port"},
		{"nothing to observe", func(c *bridge.Config) { c.Watch = nil }, "nothing to observe"},
		{"bad discover root", func(c *bridge.Config) { c.Discover = []string{"/a/"} }, "must not end with '/'"},
		{"twice", func(c *bridge.Config) { c.Discover = []string{"/a"} }, "give each path once"},
		{"glob watched", func(c *bridge.Config) { c.Watch = []string{"/a/*/leader"} }, "a path, not a glob"},
		{"glob discovered", func(c *bridge.Config) { c.Discover = []string{"/b/lock-?"} }, "a path, not a glob"},
		{"hint for nothing", func(c *bridge.Config) { c.Recipes = map[string]elect.Recipe{"/b": elect.RecipeLock} }, "neither watched nor discovered"},
		{"bad hint", func(c *bridge.Config) { c.Recipes = map[string]elect.Recipe{"/a": "queue"} }, `recipe "queue"`},
		{"bad glob", func(c *bridge.Config) { c.Recipes = elect.RecipeRules{"/a/[": elect.RecipeLock} }, "path.Match syntax"},
		// A glob that can match nothing watched or discovered never
		// applied, and nothing said so.
		{"glob for nothing", func(c *bridge.Config) { c.Recipes = elect.RecipeRules{"/b/*/leader": elect.RecipeLock} }, "would never apply"},
		{"glob below a watched group", func(c *bridge.Config) { c.Recipes = elect.RecipeRules{"/a/*": elect.RecipeLock} }, "would never apply"},
		{"glob at a discover root's level", func(c *bridge.Config) {
			c.Discover = []string{"/svc/x"}
			c.Recipes = elect.RecipeRules{"/svc/*": elect.RecipeLock}
		}, "would never apply"},
		{"HA path watched", func(c *bridge.Config) { c.HAPath = "/a" }, "also watched"},
		{"HA path a discover root", func(c *bridge.Config) { c.Discover, c.HAPath = []string{"/d"}, "/d" }, "below the discover root \"/d\""},
		{"HA path below a discover root", func(c *bridge.Config) { c.Discover, c.HAPath = []string{"/d"}, "/d/bridges" }, "below the discover root"},
		{"bad HA path", func(c *bridge.Config) { c.HAPath = "ha" }, "HA path"},
		{"a shard's election as HA path", func(c *bridge.Config) { c.HAPath = "/herald/bridges/shard-0-of-2" }, "is the election of shard 0/2 below \"/herald/bridges\""},
		{"no sinks", func(c *bridge.Config) { c.Sinks = nil }, "no sinks"},
		{"nil sink", func(c *bridge.Config) { c.Sinks = []publish.Sink{nil} }, "sink 0 is nil"},
		{"negative drain", func(c *bridge.Config) { c.DrainTimeout = -time.Second }, "drain timeout"},
		{"tiny session", func(c *bridge.Config) { c.SessionTimeout = time.Millisecond }, "session timeout"},
	} {
		cfg := ok
		tc.edit(&cfg)
		err := cfg.Validate()
		if !errors.Is(err, bridge.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrConfig saying %q", tc.name, err, tc.want)
		}
	}
	// New reports the pipeline's objections too, as ErrConfig.
	cfg := ok
	cfg.Lossless = []string{"nats"}
	if _, err := bridge.New(cfg); !errors.Is(err, bridge.ErrConfig) || !errors.Is(err, publish.ErrBadOption) {
		t.Errorf("Lossless naming no sink: %v", err)
	}
}
