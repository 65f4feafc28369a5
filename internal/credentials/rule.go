// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package credentials is the one rule for attributes that carry credentials
// (design §6): which keys are credentials, and their removal from
// OTLP data before anything is written or forwarded. The gym processor, the
// gymspans exporter, the gymcredentials processor and replay all use it.
//
// A key is a credential when it equals one of the rule's keys or ends in one
// of its suffixes, compared case-insensitively in ASCII (as HTTP compares
// header names). GenAI's token counts (gen_ai.usage.*) are never
// credentials, whatever the lists say.
package credentials // import "github.com/otelcol-gym/otelcol-gym/internal/credentials"

import "strings"

// DefaultKeys and DefaultSuffixes are the rule's lists unless configured:
// design §6's (the headers that carry credentials, and the names SDKs and
// users give tokens, keys and passwords), and, beside its suffixes, the
// form OpenTelemetry's conventions give a captured header
// (http.request.header.<name>) for each header among the keys.
var (
	DefaultKeys = []string{
		"authorization", "proxy-authorization", "cookie", "set-cookie",
		"x-api-key", "api-key", "api_key", "token",
	}
	DefaultSuffixes = []string{
		".authorization", ".api_key", "_api_key", "access_token", "refresh_token", "password", "secret",
		// Captured headers (.authorization is above).
		".proxy-authorization", ".cookie", ".set-cookie", ".x-api-key", ".api-key",
	}
)

// tokenCounts is the prefix of GenAI's token counts
// (gen_ai.usage.input_tokens, ...): never removed.
const tokenCounts = "gen_ai.usage."

// Rule says which attribute keys carry credentials. The zero Rule, and a
// Rule of two empty lists, matches nothing.
type Rule struct {
	keys, suffixes []string
	// last marks the bytes (both cases) that end a key or a suffix: most
	// keys end in another and are passed over at one lookup.
	last [256]bool
}

// NewRule is the rule of keys (whole keys) and suffixes (key endings).
func NewRule(keys, suffixes []string) *Rule {
	r := &Rule{keys: lowerAll(keys), suffixes: lowerAll(suffixes)}
	for _, s := range append(append([]string(nil), r.keys...), r.suffixes...) {
		c := s[len(s)-1]
		r.last[c] = true
		r.last[upper(c)] = true
	}
	return r
}

// Default is the rule of DefaultKeys and DefaultSuffixes.
func Default() *Rule { return NewRule(DefaultKeys, DefaultSuffixes) }

// Off reports whether the rule matches nothing (both lists empty).
func (r *Rule) Off() bool { return r == nil || len(r.keys)+len(r.suffixes) == 0 }

// Match reports whether key carries a credential.
func (r *Rule) Match(key string) bool {
	if r == nil || key == "" || !r.last[key[len(key)-1]] {
		return false
	}
	if strings.HasPrefix(key, tokenCounts) {
		return false
	}
	for _, k := range r.keys {
		if len(k) == len(key) && equalFoldASCII(key, k) {
			return true
		}
	}
	for _, s := range r.suffixes {
		if len(key) >= len(s) && equalFoldASCII(key[len(key)-len(s):], s) {
			return true
		}
	}
	return false
}

// equalFoldASCII reports whether s equals lower (already lower case) with
// ASCII letters compared without case; other bytes compare as they are.
func equalFoldASCII(s, lower string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// lowerAll is ss in lower case, without empty strings (Config.Validate
// refuses them; an empty suffix would match every key).
func lowerAll(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if s == "" {
			continue
		}
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + ('a' - 'A')
			}
		}
		out = append(out, string(b))
	}
	return out
}
