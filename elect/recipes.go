package elect

import (
	"fmt"
	"path"
	"strings"
)

// RecipeRules says what groups hold when their node names do not tell (a
// Kazoo Election and a Kazoo Lock write the same names, and so do Curator's
// LeaderSelector and InterProcessMutex). A key is a group path, a root
// whose every child is a group (as herald bridge --discover watches), or a
// glob over group paths in path.Match syntax ("/services/*/leader",
// "/locks/db-*"). For a group, an exact path wins, then the longest
// matching glob, then its parent as a root.
type RecipeRules map[string]Recipe

// Validate says what is wrong with a rule.
func (rr RecipeRules) Validate() error {
	for p, r := range rr {
		if !r.Known() {
			return fmt.Errorf("elect: recipe %q for %q: want %q or %q", r, p, RecipeElection, RecipeLock)
		}
		if err := ValidatePath(p); err != nil {
			return err
		}
		if _, err := path.Match(p, "/"); err != nil {
			return fmt.Errorf("elect: recipe pattern %q: %w (path.Match syntax: *, ?, [a-z], \\ escapes)", p, err)
		}
	}
	return nil
}

// IsPattern reports whether a rule's key is a glob rather than a path.
func IsPattern(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// For returns the recipe the rules give group, false when none does.
func (rr RecipeRules) For(group string) (Recipe, bool) {
	if r, ok := rr[group]; ok {
		return r, true
	}
	best, found := "", Recipe("")
	for p, r := range rr {
		if !IsPattern(p) || len(p) <= len(best) {
			continue
		}
		if ok, _ := path.Match(p, group); ok {
			best, found = p, r
		}
	}
	if found != "" {
		return found, true
	}
	r, ok := rr[path.Dir(group)]
	return r, ok && path.Dir(group) != "/"
}

// WithRecipeRules is AsRecipe for the group the rules name, if any; other
// groups' recipes are read from their names.
func WithRecipeRules(rr RecipeRules) ObserveOption {
	return func(o *observeOptions) error {
		if err := rr.Validate(); err != nil {
			return err
		}
		o.rules = rr
		return nil
	}
}
