// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"strings"
	"testing"
)

// TestDefaultRuleMatches: every default key, in every case, and every key
// that ends in a default suffix; design §6's lists, written out here apart
// from DefaultKeys and DefaultSuffixes so a change to either shows.
func TestDefaultRuleMatches(t *testing.T) {
	r := Default()
	keys := []string{
		"authorization", "proxy-authorization", "cookie", "set-cookie",
		"x-api-key", "api-key", "api_key", "token",
	}
	suffixes := []string{
		".authorization", ".api_key", "_api_key", "access_token", "refresh_token", "password", "secret",
		// Beside design §6's list: the captured-header form of its header keys.
		".proxy-authorization", ".cookie", ".set-cookie", ".x-api-key", ".api-key",
	}
	if strings.Join(keys, ",") != strings.Join(DefaultKeys, ",") || strings.Join(suffixes, ",") != strings.Join(DefaultSuffixes, ",") {
		t.Fatalf("the default lists are not design §6's and the captured headers':\nkeys %q\nsuffixes %q", DefaultKeys, DefaultSuffixes)
	}
	cases := func(s string) []string {
		mixed := []byte(s)
		for i := 0; i < len(mixed); i += 2 {
			mixed[i] = upper(mixed[i])
		}
		return []string{s, strings.ToUpper(s), string(mixed), strings.ToUpper(s[:1]) + s[1:]}
	}
	for _, k := range keys {
		for _, c := range cases(k) {
			if !r.Match(c) {
				t.Errorf("key %q is not matched", c)
			}
		}
	}
	for _, s := range suffixes {
		for _, c := range cases(s) {
			for _, key := range []string{"http.request.header" + c, "my" + c, "a.b.c" + c} {
				if !r.Match(key) {
					t.Errorf("key %q (suffix %q) is not matched", key, s)
				}
			}
		}
	}
	// Keys equal to a suffix match too (they end in it).
	for _, k := range []string{"password", "secret", "access_token", "refresh_token", "PASSWORD", "Secret"} {
		if !r.Match(k) {
			t.Errorf("key %q is not matched", k)
		}
	}
}

// TestDefaultRuleKeeps: near misses, and GenAI's token counts, stay.
func TestDefaultRuleKeeps(t *testing.T) {
	r := Default()
	for _, k := range []string{
		"", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.total_tokens",
		"gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.token", "gen_ai.usage.secret",
		"token_count", "tokens", "max_tokens", "gen_ai.request.max_tokens", "llm.token_count.prompt",
		"input_tokens", "tokenizer", "token.type", "tokens_per_second", "nemo.gym.rollout.id",
		"service.name", "http.request.method", "url.full", "authorization_type", "authorizations",
		"cookies", "api_keys", "api_key_id", "x-api-key-hint", "password_changed_at", "secrets",
		"secret_name", "secret.name", "authorization.scheme", "csrf_token_name", "keytoken_count",
		"api key", "apikey", "xapi-key", "authorizatio", "okenn",
	} {
		if r.Match(k) {
			t.Errorf("key %q is matched; it must stay", k)
		}
	}
}

// TestRuleUnicodeCaseIsNotFolded: case is compared in ASCII only, as HTTP
// header names are: a key spelt with the Kelvin sign is another key.
func TestRuleUnicodeCaseIsNotFolded(t *testing.T) {
	if Default().Match("api_\u212aey") {
		t.Error("a non-ASCII letter was folded")
	}
}

// TestConfiguredRule: configured lists replace the defaults; empty lists
// turn the rule off; the token counts stay even when a list names them.
func TestConfiguredRule(t *testing.T) {
	r := NewRule([]string{"X-Gym-Key"}, []string{"_TOKENS", ".pin"})
	for k, want := range map[string]bool{
		"x-gym-key": true, "X-GYM-KEY": true, "authorization": false, "api_key": false,
		"my_tokens": true, "card.PIN": true, "gen_ai.usage.input_tokens": false, "gen_ai.usage.output_tokens": false,
	} {
		if got := r.Match(k); got != want {
			t.Errorf("Match(%q) = %v, want %v", k, got, want)
		}
	}
	off := NewRule(nil, []string{})
	if !off.Off() || off.Match("authorization") || off.Match("password") {
		t.Error("a rule of empty lists matches")
	}
	var nilRule *Rule
	if !nilRule.Off() || nilRule.Match("authorization") {
		t.Error("the nil rule matches")
	}
	if Default().Off() {
		t.Error("the default rule is off")
	}
}
