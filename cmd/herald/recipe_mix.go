package main

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/zkherald/herald/elect"
)

// mixedRecipeFlag is --mixed-recipe on run and lock.
func mixedRecipeFlag(f *pflag.FlagSet, v *bool) {
	f.BoolVar(v, "mixed-recipe", false, "join a group that holds the other recipe (a lock's for run, an election's for lock) without a warning")
}

// warnRecipeMix warns (once a process) when the group at p holds the
// other recipe than ours, as its nodes' names or herald's mark on it tell
// (a group nothing tells about is no reason), naming what it holds and the
// flag that joins it without a word; forced (--mixed-recipe) or unread, it
// says nothing. Its queue orders us by sequence all the same, so it is no
// unsafe group; but herald who, history and the bridges report the group
// by its recipe, which a group keeps once known: a lock's tenures would
// read as leaders', an election's as holders', and a command meant to run
// alone under a lock waits for a leader that may never step down. It
// reads no node of the queue (elect.GroupRecipe), so a start costs the
// same in a group of thousands.
func (a *app) warnRecipeMix(ctx context.Context, s *elect.Session, p string, ours elect.Recipe, forced bool) {
	if forced || a.recipeWarned {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	seen, known, err := elect.GroupRecipe(rctx, s, p)
	if err != nil || !known || seen == ours {
		return
	}
	a.recipeWarned = true
	cmd, flag, who := "lock", "--lock", "herald's Election, Curator's LeaderLatch"
	if ours == elect.RecipeElection {
		cmd, flag, who = "run", "--election", "herald's Lock, Curator's mutex, go-zookeeper's Lock, Kazoo's Lock"
	}
	a.log.Warn("herald "+cmd+" "+flag+" "+p+" joins a group that holds "+an(seen)+" (its nodes' names or herald's mark on it say so: "+who+"): it is ordered with them by sequence, "+
		"but herald who, history and the bridges report the group as "+an(seen)+", and this "+cmd+" waits behind their owner; check the path, or give --mixed-recipe to join it on purpose",
		"group", p, "recipe", string(seen))
}

// an is the recipe with its article.
func an(r elect.Recipe) string {
	if r == elect.RecipeElection {
		return "an election"
	}
	return "a lock"
}
