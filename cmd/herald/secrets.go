package main

import (
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// secretFlag is a secret flag and its file twin: --NAME VALUE shows in ps,
// --NAME-file PATH does not.
type secretFlag struct {
	name  string
	value *string
	file  string
}

// addSecretFiles adds a --NAME-file twin to each secret flag.
func addSecretFiles(fl *pflag.FlagSet, secrets []*secretFlag) {
	for _, s := range secrets {
		fl.StringVar(&s.file, s.name+"-file", "", "file holding the --"+s.name+" value (kept out of ps and the shell history)")
	}
}

// readSecretFiles sets each secret from its file, when one is given: the
// file's content without its trailing line break. Both a value and a file
// is a usage error, as is a file that cannot be read or is empty.
func readSecretFiles(secrets []*secretFlag) error {
	for _, s := range secrets {
		if s.file == "" {
			continue
		}
		if *s.value != "" {
			return usageErr("--%s and --%s-file both given: give one", s.name, s.name)
		}
		b, err := os.ReadFile(s.file)
		if err != nil {
			return usageErr("--%s-file: %v", s.name, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return usageErr("--%s-file %s is empty", s.name, s.file)
		}
		*s.value, s.file = v, "" // read once: a second call finds the value set
	}
	return nil
}
