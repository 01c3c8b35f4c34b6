package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// configCmd is a command with string, list, duration and int flags, read
// from a --config file holding yaml.
func configCmd(t *testing.T, yaml string) (*cobra.Command, string) {
	t.Helper()
	cmd := &cobra.Command{Use: "bridge"}
	cmd.Flags().String("source", "default-source", "")
	cmd.Flags().String("nats-password", "", "")
	cmd.Flags().String("kafka", "", "")
	cmd.Flags().StringSlice("watch", nil, "")
	cmd.Flags().Duration("drain-timeout", 0, "")
	cmd.Flags().Int("kafka-partitions", 3, "")
	path := filepath.Join(t.TempDir(), "bridge.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return cmd, path
}

// TestConfigKeepsScalarsAsWritten: a value in --config reaches its flag as
// written. YAML would make 0123 the octal 83, yes true, a long number a
// float that loses its last digits and 1.50 1.5, so a numeric password,
// token or source was sent changed and failed far from the cause.
func TestConfigKeepsScalarsAsWritten(t *testing.T) {
	for _, v := range []string{"0123", "yes", "no", "on", "12345678901234567890", "1.50", "1e3", "0x1F", "0o17", ".inf", "2026-01-02", "'007'", `"0123"`} {
		want := strings.Trim(v, `'"`)
		cmd, path := configCmd(t, "source: "+v+"\nnats-password: "+v+"\nwatch: ["+v+", /b]\n")
		if err := applyConfigFile(cmd, path); err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		for _, name := range []string{"source", "nats-password"} {
			if got := cmd.Flags().Lookup(name).Value.String(); got != want {
				t.Errorf("%s: %s in --config: the flag holds %q, want %q", name, v, got, want)
			}
		}
		if got, _ := cmd.Flags().GetStringSlice("watch"); len(got) != 2 || got[0] != want {
			t.Errorf("watch: [%s, /b] in --config: the flag holds %q", v, got)
		}
	}
	// Still read: durations, a block list, a null, a block scalar.
	cmd, path := configCmd(t, "drain-timeout: 3s\nwatch:\n  - /a\n  - 0123\nsource: ~\nnats-password: |-\n  p4ss\n")
	if err := applyConfigFile(cmd, path); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"drain-timeout": "3s", "watch": "[/a,0123]", "source": "", "nats-password": "p4ss"} {
		if got := cmd.Flags().Lookup(name).Value.String(); got != want {
			t.Errorf("%s: the flag holds %q, want %q", name, got, want)
		}
	}
	// A flag of comma-separated servers takes a list too, joined.
	cmd, path = configCmd(t, "kafka:\n  - k1:9092\n  - k2:9092\n")
	if err := applyConfigFile(cmd, path); err != nil {
		t.Fatal(err)
	}
	if got := cmd.Flags().Lookup("kafka").Value.String(); got != "k1:9092,k2:9092" {
		t.Errorf("kafka: [k1:9092, k2:9092]: the flag holds %q, want k1:9092,k2:9092", got)
	}
	// A mapping where a value belongs, and a key given twice, are refused.
	for yaml, want := range map[string]string{
		"source: {a: 1}\n":               "source: line 1: want a string, number or boolean, got a mapping",
		"watch: [/a]\nwatch: [/b]\n":     `line 2: key "watch" given twice`,
		"- source\n":                     "not a YAML mapping",
		"source: [a, b]\n":               "a list, but --source takes one value",
		"watch: [[/a]]\n":                "got a list",
		"drain-timeout: soon\n":          `drain-timeout: "soon": not a duration; give a duration such as 500ms, 5s or 1m30s`,
		"source: a\n  b: c\nwatch: /a\n": "not a YAML mapping",
		"kafka-partitions: three\n":      `kafka-partitions: "three": not a whole number; give a whole number`,
	} {
		cmd, path := configCmd(t, yaml)
		if err := applyConfigFile(cmd, path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", yaml, err, want)
		}
	}
}

// TestConfigEmptyEnvIsUnset: an empty HERALD_<FLAG> (compose's ${X:-}, a
// template's blank) leaves the default, as an unset one does; it used to
// drop the same key of --config too, so neither counted.
func TestConfigEmptyEnvIsUnset(t *testing.T) {
	for _, env := range []string{"", "  "} {
		t.Setenv("HERALD_SOURCE", env)
		t.Setenv("HERALD_NATS_PASSWORD", env)
		cmd, path := configCmd(t, "source: from-file\nnats-password: pw-from-file\n")
		if err := applyConfigFile(cmd, path); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{"source": "from-file", "nats-password": "pw-from-file"} {
			if got := cmd.Flags().Lookup(name).Value.String(); got != want {
				t.Errorf("%s=%q and %s in --config: the flag holds %q, want the file's", "HERALD_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_")), env, name, got)
			}
		}
	}
	// A variable with a value still wins over the file.
	t.Setenv("HERALD_SOURCE", "from-env")
	cmd, path := configCmd(t, "source: from-file\n")
	if err := applyConfigFile(cmd, path); err != nil {
		t.Fatal(err)
	}
	if got := cmd.Flags().Lookup("source").Value.String(); got != "default-source" {
		t.Errorf("HERALD_SOURCE=from-env: the file set the flag to %q; the environment is applied before, and wins", got)
	}
}
