package natssink

import (
	"net/url"
	"strings"
)

// Redact returns a URL list with the secrets in it masked:
// nats://bob:secret@h:4222 becomes nats://bob:***@h:4222, and a token or
// bare user in the userinfo becomes ***.
func Redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		parts[i] = redactOne(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

func redactOne(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		// Unparseable: mask everything between the scheme and the '@'.
		start := strings.Index(s, "://")
		if start < 0 || start+3 > at {
			return "***" + s[at:]
		}
		return s[:start+3] + "***" + s[at:]
	}
	if _, ok := u.User.Password(); ok {
		return u.Scheme + "://" + u.User.Username() + ":***@" + u.Host + u.EscapedPath()
	}
	return u.Scheme + "://***@" + u.Host + u.EscapedPath()
}

// secrets lists the strings that must never appear in a message.
func (o Options) secrets() []string {
	var out []string
	for _, s := range []string{o.Password, o.Token} {
		if s != "" {
			out = append(out, s, url.QueryEscape(s), url.PathEscape(s))
		}
	}
	for _, p := range strings.Split(o.URL, ",") {
		p = strings.TrimSpace(p)
		if !strings.Contains(p, "://") {
			p = "nats://" + p // as the client reads it
		}
		u, err := url.Parse(p)
		if err != nil {
			// Unparseable, and its parse error quotes it whole: what
			// Redact masks (between the scheme and the last '@') is
			// secret, and so is its password alone.
			if at := strings.LastIndex(p, "@"); at >= 0 {
				info := p[:at]
				if i := strings.Index(info, "://"); i >= 0 {
					info = info[i+3:]
				}
				_, pw, _ := strings.Cut(info, ":")
				out = append(out, info, pw)
			}
			continue
		}
		if u.User == nil {
			continue
		}
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		} else if n := u.User.Username(); n != "" {
			out = append(out, n) // a token
		}
	}
	return out
}

// scrub removes every secret from msg.
func (o Options) scrub(msg string) string {
	for _, s := range o.secrets() {
		if len(s) >= 3 { // masking one or two characters would mangle the text, not protect anything
			msg = strings.ReplaceAll(msg, s, "***")
		}
	}
	return msg
}

// redactedError carries an error whose text had secrets removed, while
// errors.Is and errors.As still see the original chain.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Scrub returns err with every secret of o removed from its text. The
// sinks wrap every error that could have seen a URL or credential with it.
func (o Options) Scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := o.scrub(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}
