package natssink_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zkherald/herald/sinks/natssink"
)

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		o    natssink.Options
		want string
	}{
		{"no url", natssink.Options{}, "no NATS URL"},
		{"empty entry", natssink.Options{URL: "nats://a:1,,nats://b:2"}, "empty entry"},
		{"two auths", natssink.Options{URL: "nats://a:1", User: "u", Password: "p", Token: "t"}, "choose one way"},
		{"user only", natssink.Options{URL: "nats://a:1", User: "u"}, "user and password go together"},
		{"cert only", natssink.Options{URL: "nats://a:1", TLS: natssink.TLSOptions{CertFile: "c.pem"}}, "certificate and key go together"},
		{"negative", natssink.Options{URL: "nats://a:1", Timeout: -1}, "Timeout is negative"},
		{"max below first", natssink.Options{URL: "nats://a:1", ReconnectWait: 2e9, MaxReconnectWait: 1e9}, "below ReconnectWait"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := natssink.New(c.o)
			if !errors.Is(err, natssink.ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrConfig saying %q", err, c.want)
			}
		})
	}
	if _, err := natssink.New(natssink.Options{URL: "nats://a:1", Token: "t"}); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
}

func TestOptionsStringHidesSecrets(t *testing.T) {
	o := natssink.Options{URL: "nats://u:pw-in-url@h:4222", User: "u", Password: "pw-option"}
	s := o.String()
	if strings.Contains(s, "pw-in-url") || strings.Contains(s, "pw-option") || !strings.Contains(s, "user u") {
		t.Fatalf("String() = %q", s)
	}
	err := o.Scrub(errors.New("dial nats://u:pw-in-url@h:4222 with pw-option"))
	if strings.Contains(err.Error(), "pw-") {
		t.Fatalf("Scrub left a secret: %v", err)
	}
}

func TestMissingFilesNamed(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []natssink.Options{
		{URL: url, CredsFile: dir + "/bridge.creds"},
		{URL: url, TLS: natssink.TLSOptions{CAFile: dir + "/ca.pem"}},
		{URL: url, TLS: natssink.TLSOptions{CertFile: dir + "/c.pem", KeyFile: dir + "/k.pem"}},
	} {
		_, err := o.Dial(context.Background())
		if !errors.Is(err, natssink.ErrConfig) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %v, want ErrConfig naming the missing file", o, err)
		}
	}
}
