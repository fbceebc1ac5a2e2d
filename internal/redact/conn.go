package redact

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// connSecret matches a password given as a key=value setting: in a
// PostgreSQL DSN (password=…, or quoted password='…') or a URL's query
// (?password=…).
var connSecret = regexp.MustCompile(`(?i)\b(password|passwd|pwd)(\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&'";]*)`)

// Masked stands for a password [ConnError] took out.
const Masked = "xxxxx"

// ConnError returns err with every secret of the connection string conn
// taken out of its message: the user information of a URL
// (scheme://user:password@host, found even where conn does not parse) and
// its password percent-decoded, and any password=… setting. The error it
// returns keeps err's message so masked and nothing else of err: not err
// itself, whose chain may hold the connection string (a *url.Error does),
// so that no %+v, errors.As or log of it can show the password. A nil err
// is nil.
func ConnError(conn string, err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if _, ok := errors.AsType[*url.Error](err); ok {
		// net/url quotes the pieces it cannot parse, and where a URL is
		// malformed a piece of the password may be read as a port or a
		// host: nothing it quotes is shown.
		text = quoted.ReplaceAllString(text, `"…"`)
	}
	return errors.New(Conn(conn, text))
}

// quoted matches a Go-quoted string.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// Conn returns text with every secret of the connection string conn
// masked, as [ConnError] does; text is often conn itself.
func Conn(conn, text string) string {
	for _, s := range connSecrets(conn) {
		text = strings.ReplaceAll(text, s, Masked)
	}
	return connSecret.ReplaceAllString(text, "${1}${2}"+Masked)
}

// HasPassword reports whether the connection string conn carries a
// password: in a URL's user information (user:password@) or as a
// password=… setting.
func HasPassword(conn string) bool {
	if u, err := url.Parse(conn); err == nil && u.User != nil {
		if _, set := u.User.Password(); set {
			return true
		}
	} else if err != nil && len(connSecrets(conn)) > 1 {
		return true // a malformed URL: user:password@ by its text
	}
	return connSecret.MatchString(conn)
}

// connSecrets are the substrings of conn to mask, longest first: the
// user information of a URL and its password, raw and percent-decoded.
func connSecrets(conn string) []string {
	_, rest, ok := strings.Cut(conn, "://")
	if !ok {
		return nil
	}
	// The user information ends at the last "@" of the authority; where
	// the authority ends is unsure in a malformed URL (a password may hold
	// a "/"), so every "@" counts: the more is masked, the safer.
	at := strings.LastIndexByte(rest, '@')
	if at <= 0 {
		return nil
	}
	info := rest[:at]
	secrets := []string{info}
	if _, pw, ok := strings.Cut(info, ":"); ok && pw != "" {
		secrets = append(secrets, pw)
		if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
			secrets = append(secrets, dec)
		}
		if esc := url.QueryEscape(pw); esc != pw {
			secrets = append(secrets, esc)
		}
		// A parser that splits a malformed URL elsewhere shows pieces of
		// the password: every piece of 4 bytes or more between the
		// characters URLs split at.
		for _, piece := range strings.FieldsFunc(pw, func(r rune) bool { return strings.ContainsRune("/@:%?#&=[] ", r) }) {
			if len(piece) >= 4 {
				secrets = append(secrets, piece)
			}
		}
	}
	return secrets
}
