package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// applyConfigFile sets, from a YAML file whose keys are flag names, every
// flag given neither on the command line nor in the environment: flags
// override the environment, which overrides the file.
func applyConfigFile(cmd *cobra.Command, path string) error {
	if path == "" {
		return nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return usageErr("--config: %v", err)
	}
	values, err := configValues(raw)
	if err != nil {
		return usageErr("--config %s: not a YAML mapping of flag names to values: %v", path, err)
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f := cmd.Flags().Lookup(k)
		if f == nil {
			f = cmd.InheritedFlags().Lookup(k)
		}
		if f == nil || k == "config" || k == "help" {
			return usageErr("--config %s: unknown key %q; the keys are the flag names of '%s' (see --help)", path, k, cmd.CommandPath())
		}
		if f.Changed || envSet(f.Name) {
			continue
		}
		if err := setFromConfig(f, values[k]); err != nil {
			return usageErr("--config %s: %s: %v", path, k, err)
		}
	}
	return nil
}

// configValues reads a YAML mapping of flag names to values, keeping each
// scalar as written: 0123, yes, 1.50 and 12345678901234567890 reach the
// flag as those characters, not as the number or boolean YAML would make
// of them (a numeric password or source stays what it is). A null (an
// empty value, ~ or null) is the empty string.
func configValues(raw []byte) (map[string]*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 { // an empty file
		return nil, nil
	}
	top := deref(&doc)
	if top.Kind == yaml.DocumentNode && len(top.Content) == 1 {
		top = deref(top.Content[0])
	}
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: not a mapping", top.Line)
	}
	values := make(map[string]*yaml.Node, len(top.Content)/2)
	for i := 0; i+1 < len(top.Content); i += 2 {
		k := deref(top.Content[i])
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: a key must be a flag name", k.Line)
		}
		// A key given twice would silently drop the first value.
		if _, dup := values[k.Value]; dup {
			return nil, fmt.Errorf("line %d: key %q given twice", k.Line, k.Value)
		}
		values[k.Value] = deref(top.Content[i+1])
	}
	return values, nil
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func envSet(flag string) bool {
	// As applyEnv: an empty variable (compose's ${X:-}) is unset, so the
	// file's value counts rather than neither.
	v, ok := os.LookupEnv("HERALD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_")))
	return ok && strings.TrimSpace(v) != ""
}

// valueHint says what a flag of a kind pflag names takes, for a value of
// --config that it refused: its own error names the parser, not the form.
func valueHint(kind string) string {
	switch kind {
	case "duration":
		return "; give a duration such as 500ms, 5s or 1m30s"
	case "int", "int32", "int64", "uint", "uint16", "uint32", "uint64":
		return "; give a whole number"
	case "bool":
		return "; give true or false"
	}
	return ""
}

// commaLists are the flags that take one string of comma-separated items
// (servers, URLs, ACL entries): in --config a YAML list of them is joined.
var commaLists = map[string]bool{"zk": true, "nats": true, "kafka": true, "zk-acl": true}

// setFromConfig sets a flag from a YAML value: a scalar, or for a list flag
// a list (or a comma-separated string).
func setFromConfig(f *pflag.Flag, n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		sv, ok := f.Value.(pflag.SliceValue)
		if !ok && !commaLists[f.Name] {
			return fmt.Errorf("a list, but --%s takes one value", f.Name)
		}
		items := make([]string, len(n.Content))
		for i, x := range n.Content {
			s, err := scalar(deref(x))
			if err != nil {
				return err
			}
			items[i] = s
		}
		if !ok {
			return f.Value.Set(strings.Join(items, ","))
		}
		return sv.Replace(items)
	}
	s, err := scalar(n)
	if err != nil {
		return err
	}
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.Replace(splitList(s))
	}
	if err := f.Value.Set(s); err != nil {
		return fmt.Errorf("%q: %s", s, badValue(f.Value.Type(), err))
	}
	return nil
}

// scalar is a scalar's text as written (quotes aside).
func scalar(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: want a string, number or boolean, got a %s", n.Line, kindName(n.Kind))
	}
	if n.Tag == "!!null" {
		return "", nil
	}
	return n.Value, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	}
	return "document"
}
