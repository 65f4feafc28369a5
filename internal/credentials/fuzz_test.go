// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"strings"
	"testing"
)

// reference is the rule as design §6 words it, written the slow, obvious
// way: ASCII lower case, then equal or ends in; token counts never.
func reference(keys, suffixes []string, key string) bool {
	if strings.HasPrefix(key, "gen_ai.usage.") {
		return false
	}
	lower := func(s string) string {
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 32
			}
		}
		return string(b)
	}
	k := lower(key)
	for _, w := range keys {
		if w != "" && k == lower(w) {
			return true
		}
	}
	for _, s := range suffixes {
		if s != "" && strings.HasSuffix(k, lower(s)) {
			return true
		}
	}
	return false
}

// FuzzMatch: the matcher agrees with the reference for the default lists
// and for a configured list made of the input's own pieces.
func FuzzMatch(f *testing.F) {
	for _, s := range append(append([]string{
		"", "gen_ai.usage.input_tokens", "token_count", "Authorization", "x.API_KEY", "\xff", "api_\u212aey",
	}, DefaultKeys...), DefaultSuffixes...) {
		f.Add(s, "x-key", "_PIN")
	}
	def := Default()
	f.Fuzz(func(t *testing.T, key, k, s string) {
		if got, want := def.Match(key), reference(DefaultKeys, DefaultSuffixes, key); got != want {
			t.Fatalf("default rule: Match(%q) = %v, the reference says %v", key, got, want)
		}
		keys, suffixes := []string{k}, []string{s}
		if got, want := NewRule(keys, suffixes).Match(key), reference(keys, suffixes, key); got != want {
			t.Fatalf("rule %q %q: Match(%q) = %v, the reference says %v", keys, suffixes, key, got, want)
		}
	})
}
