package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
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
	var values map[string]any
	// Strict: a key given twice would silently drop the first value.
	js, err := yaml.YAMLToJSONStrict(raw)
	if err == nil {
		err = json.Unmarshal(js, &values)
	}
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

func envSet(flag string) bool {
	_, ok := os.LookupEnv("HERALD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_")))
	return ok
}

// setFromConfig sets a flag from a YAML value: a scalar, or for a list flag
// a list (or a comma-separated string).
func setFromConfig(f *pflag.Flag, v any) error {
	if list, ok := v.([]any); ok {
		sv, ok := f.Value.(pflag.SliceValue)
		if !ok {
			return fmt.Errorf("a list, but --%s takes one value", f.Name)
		}
		items := make([]string, len(list))
		for i, x := range list {
			s, err := scalar(x)
			if err != nil {
				return err
			}
			items[i] = s
		}
		return sv.Replace(items)
	}
	s, err := scalar(v)
	if err != nil {
		return err
	}
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.Replace(splitList(s))
	}
	return f.Value.Set(s)
}

func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return fmt.Sprint(x), nil
	case float64:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%f", x), "0"), "."), nil
	case nil:
		return "", nil
	}
	return "", fmt.Errorf("want a string, number or boolean, got %T", v)
}
