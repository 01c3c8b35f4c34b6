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
		v, err := secretFromFile("--"+s.name+"-file", s.file)
		if err != nil {
			return err
		}
		*s.value, s.file = v, "" // read once: a second call finds the value set
	}
	return nil
}

// secretFromFile reads a secret from file: its content without the
// trailing line break. A file that cannot be read, is empty, holds more
// than one line or has blanks around the secret is a usage error rather
// than a secret sent as it is: a second line or a trailing space would log
// in as another identity, which ZooKeeper's digest scheme does not refuse
// (the nodes then refuse it, far from the cause). A secret that does begin
// or end with a blank is given through the environment instead.
func secretFromFile(flag, file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", usageErr("%s: %v", flag, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	switch {
	case v == "":
		return "", usageErr("%s %s is empty", flag, file)
	case strings.ContainsAny(v, "\r\n"):
		return "", usageErr("%s %s holds more than one line: give the secret alone, on one line", flag, file)
	case strings.TrimSpace(v) != v && flag == "--zk-auth-file":
		return "", usageErr("%s %s has blanks before or after user:password, which would be sent as part of it: remove them (digest credentials cannot begin or end with a blank)", flag, file)
	case strings.TrimSpace(v) != v:
		return "", usageErr("%s %s has blanks before or after the secret, which would be sent as part of it: remove them (a secret that has them goes in the environment variable instead)", flag, file)
	}
	return v, nil
}
