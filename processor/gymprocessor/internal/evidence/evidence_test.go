// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package evidence

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// gymConfig is the gym processor's default configuration of evidence.
func gymConfig() Config {
	return Config{
		Attribute:     gymconv.RolloutAttribute,
		URLAttributes: gymconv.DefaultURLAttributes(),
		URLPrefix:     gymconv.URLPrefix,
		Pattern:       gymconv.RolloutIDPattern,
		ModelRoutes:   []string{"/v1/responses", "/v1/chat/completions", "/v1/completions"},
	}
}

func TestEvidence(t *testing.T) {
	f, err := New(gymConfig())
	require.NoError(t, err)
	cases := []struct {
		attrs map[string]any
		want  string
	}{
		{map[string]any{"nemo.gym.rollout.id": "12-3"}, "12-3"},
		{map[string]any{"nemo.gym.rollout.id": "", "url.path": "/ng-rollout/1-0/verify"}, "1-0"},
		{map[string]any{"nemo.gym.rollout.id": int64(4), "http.target": "/ng-rollout/1-0/verify"}, "1-0"},
		{map[string]any{"http.target": "/ng-rollout/1-0/training-token-capture/v1/responses"}, "1-0"},
		{map[string]any{"url.full": "http://h:1/ng-rollout/a.b_c-d/v1/responses?x=1"}, "a.b_c-d"},
		{map[string]any{"http.url": "http://h:1/ng-rollout/-x/v1/ng-rollout/2-2/y"}, "2-2"},
		{map[string]any{"http.target": "/ng-rollout/1-0"}, ""},
		{map[string]any{"http.target": "/ng-rollout//verify"}, ""},
		{map[string]any{"http.target": "/xng-rollout/1-0/verify"}, ""},
		{map[string]any{"url.path": "/verify", "http.target": "/ng-rollout/1-0/verify"}, ""},
		{map[string]any{"url.path": int64(3), "http.target": "/ng-rollout/1-0/verify"}, ""},
	}
	for _, c := range cases {
		m := pcommon.NewMap()
		require.NoError(t, m.FromRaw(c.attrs))
		got, inAttr := f.Find(m)
		assert.Equal(t, c.want, got, "%v", c.attrs)
		assert.Equal(t, c.want == "12-3", inAttr, "%v: only the first case names it in the attribute", c.attrs)
	}

	cfg := gymConfig()
	cfg.URLPrefix = "r"
	cfg.Pattern = "[0-9]+"
	cfg.Attribute = "rid"
	f, err = New(cfg)
	require.NoError(t, err)
	m := pcommon.NewMap()
	m.PutStr("url.path", "/r/x1/r/42/v")
	got, inAttr := f.Find(m)
	assert.Equal(t, "42", got)
	assert.False(t, inAttr)
	m.PutStr("rid", "z")
	got, inAttr = f.Find(m)
	assert.Equal(t, "z", got)
	assert.True(t, inAttr)
}

func TestCompilePattern(t *testing.T) {
	for _, bad := range []string{"", " ", "(", "a*"} {
		_, err := CompilePattern(bad)
		assert.Error(t, err, "%q", bad)
	}
	re, err := CompilePattern("[0-9]+")
	require.NoError(t, err)
	assert.True(t, re.MatchString("42"))
	assert.False(t, re.MatchString("x42"), "anchored: a whole segment")
}

func TestObservabilityOffSign(t *testing.T) {
	f, err := New(gymConfig())
	require.NoError(t, err)
	span := func(name string, kind ptrace.SpanKind, attrs map[string]any) ptrace.Span {
		sp := ptrace.NewSpan()
		sp.SetName(name)
		sp.SetKind(kind)
		require.NoError(t, sp.Attributes().FromRaw(attrs))
		return sp
	}
	for _, c := range []struct {
		sp   ptrace.Span
		want bool
	}{
		{span("gym.rollout", ptrace.SpanKindInternal, nil), true},
		{span("POST", ptrace.SpanKindServer, map[string]any{"http.method": "post", "http.target": "/v1/responses"}), true},
		{span("POST", ptrace.SpanKindServer, map[string]any{"http.request.method": "POST", "url.full": "http://h:1/v1/chat/completions?x"}), true},
		{span("POST", ptrace.SpanKindServer, map[string]any{"http.method": "POST", "http.target": "/ng-rollout/1-0/v1/responses"}), false},
		{span("POST", ptrace.SpanKindServer, map[string]any{"http.method": "POST", "http.target": "/verify"}), false},
		{span("POST", ptrace.SpanKindServer, map[string]any{"http.method": "POST"}), false},
		{span("GET", ptrace.SpanKindServer, map[string]any{"http.method": "GET", "http.target": "/v1/responses"}), false},
		{span("HTTP POST", ptrace.SpanKindClient, map[string]any{"http.method": "POST", "url.full": "http://h:1/v1/responses"}), false},
	} {
		assert.Equal(t, c.want, f.ObservabilityOffSign(c.sp), "%s %v", c.sp.Name(), c.sp.Attributes().AsRaw())
	}
}

func FuzzEvidenceFromURL(f *testing.F) {
	for _, s := range []string{"/ng-rollout/1-0/verify", "/ng-rollout/", "/ng-rollout/ng-rollout/x/", "http://h/ng-rollout/a/b"} {
		f.Add(s)
	}
	fd, err := New(gymConfig())
	if err != nil {
		f.Fatal(err)
	}
	re, err := CompilePattern(gymconv.RolloutIDPattern)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, u string) {
		got := fd.FromURL(u)
		if got == "" {
			return
		}
		if !gymconv.ValidRolloutID(got) || !re.MatchString(got) {
			t.Fatalf("%q from %q does not match the pattern", got, u)
		}
		if !strings.Contains(u, "/ng-rollout/"+got+"/") {
			t.Fatalf("%q is not a /ng-rollout/R/ segment of %q", got, u)
		}
	})
}
