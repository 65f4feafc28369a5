// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package credentials

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var update = flag.Bool("update", false, "rewrite the golden *_out.json files")

// secretValue is how the golden inputs spell every value that must go.
var secretValue = regexp.MustCompile(`"[a-z]+-secret-\d+"|"Bearer [a-z]+-secret-\d+"`)

// golden compares got (OTLP/JSON) with testdata/<name>_out.json, indented.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, json.Indent(&b, got, "", " "))
	b.WriteByte('\n')
	path := filepath.Join("testdata", name+"_out.json")
	if *update {
		require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), b.String(), "%s differs from the removal's output (go test -update rewrites it)", path)
}

// checkRemoved: every secret value of the input is gone, and nothing else:
// the count is the number of secret values, and the output is the input
// without exactly those attributes.
func checkRemoved(t *testing.T, in, out []byte, n int, keys []string) {
	t.Helper()
	secrets := secretValue.FindAll(in, -1)
	require.NotEmpty(t, secrets, "the golden input holds no secret")
	assert.Equal(t, len(secrets), n, "removed count")
	assert.Len(t, keys, n, "keys reported")
	for _, s := range secrets {
		assert.NotContains(t, string(out), string(s))
	}
	for _, kept := range []string{`"kept"`, "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "service.name"} {
		assert.Equal(t, strings.Count(string(in), kept), strings.Count(string(out), kept), "%s stays", kept)
	}
}

// TestRemoveFromTracesGolden: resource, span, event and link attributes of
// every default key and suffix, in mixed case, are removed; near misses and
// GenAI's token counts stay.
func TestRemoveFromTracesGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "traces_in.json"))
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(in)
	require.NoError(t, err)
	r := Default()
	require.True(t, r.InTraces(td))
	var keys []string
	n := r.RemoveFromTraces(td, func(k string) { keys = append(keys, k) })
	assert.False(t, r.InTraces(td), "credentials left after the removal")
	assert.Equal(t, 0, r.RemoveFromTraces(td, nil), "a second removal finds nothing")
	out, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	checkRemoved(t, in, out, n, keys)
	sort.Strings(keys)
	assert.Contains(t, keys, "Authorization")       // resource
	assert.Contains(t, keys, "password")            // event
	assert.Contains(t, keys, "Proxy-Authorization") // link
	assert.Equal(t, 2, td.SpanCount()-1, "spans stay")
	golden(t, "traces", out)
}

func TestRemoveFromMetricsGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "metrics_in.json"))
	require.NoError(t, err)
	md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(in)
	require.NoError(t, err)
	r := Default()
	require.True(t, r.InMetrics(md))
	var keys []string
	n := r.RemoveFromMetrics(md, func(k string) { keys = append(keys, k) })
	assert.False(t, r.InMetrics(md))
	out, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	require.NoError(t, err)
	checkRemoved(t, in, out, n, keys)
	golden(t, "metrics", out)
}

func TestRemoveFromLogsGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "logs_in.json"))
	require.NoError(t, err)
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(in)
	require.NoError(t, err)
	r := Default()
	require.True(t, r.InLogs(ld))
	var keys []string
	n := r.RemoveFromLogs(ld, func(k string) { keys = append(keys, k) })
	assert.False(t, r.InLogs(ld))
	out, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	checkRemoved(t, in, out, n, keys)
	golden(t, "logs", out)
}

// TestRemoveOffChangesNothing: a rule of empty lists removes nothing and
// reports nothing.
func TestRemoveOffChangesNothing(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "traces_in.json"))
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(in)
	require.NoError(t, err)
	before, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	off := Config{Keys: []string{}, Suffixes: []string{}}.Rule()
	assert.False(t, off.InTraces(td))
	assert.Equal(t, 0, off.RemoveFromTraces(td, func(k string) { t.Errorf("removed %q", k) }))
	after, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}

// TestReadOnlyDataUntouchedWithoutCredentials: data without credentials is
// never written to, so read-only data passes (the InTraces / RemoveFrom*
// contract consumers that do not mutate rely on).
func TestReadOnlyDataUntouchedWithoutCredentials(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "x")
	rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty().Attributes().PutInt("gen_ai.usage.input_tokens", 3)
	td.MarkReadOnly()
	assert.False(t, Default().InTraces(td))
	assert.Equal(t, 0, Default().RemoveFromTraces(td, nil)) // would panic on a write
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, NewDefaultConfig().Validate())
	require.NoError(t, Config{Keys: []string{}, Suffixes: []string{}}.Validate())
	err := Config{Keys: []string{"a", ""}, Suffixes: []string{""}}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "keys[1] is empty")
	assert.Contains(t, err.Error(), "suffixes[0] is empty")
}
