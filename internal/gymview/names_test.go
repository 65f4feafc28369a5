// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

func TestValidID(t *testing.T) {
	for _, ok := range []string{"0-0", "12-3-a1", "a", "A.b_c-d", strings.Repeat("a", 200), "run.1"} {
		assert.True(t, gymconv.SafeFileID(ok), "%q", ok)
	}
	for _, bad := range []string{
		"", ".", "..", "../x", "a/b", "a\\b", ".hidden", "-x", "_x", "a\x00b", "a\n", "a b", "é",
		strings.Repeat("a", 201), "%2e%2e", "a%2Fb", "x/../../etc/passwd",
	} {
		assert.False(t, gymconv.SafeFileID(bad), "%q", bad)
	}
}

func TestRolloutOfSpansFile(t *testing.T) {
	for name, want := range map[string]string{
		"0-0.spans.jsonl": "0-0", "12-3-a1.spans.jsonl": "12-3-a1", "a.b.spans.jsonl": "a.b",
	} {
		got, ok := rolloutOfSpansFile(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, got)
	}
	for _, name := range []string{"spans.jsonl", ".spans.jsonl", "0-0.capture.jsonl", "rollouts.jsonl", "-x.spans.jsonl", "spans-20260821T120000.000.jsonl"} {
		_, ok := rolloutOfSpansFile(name)
		assert.False(t, ok, name)
	}
}

// FuzzRolloutFile: whatever a request names, the file name the viewer would
// open stays one plain name inside the capture dir.
func FuzzRolloutFile(f *testing.F) {
	for _, s := range []string{"0-0", "..", "a/b", "a\x00", ".x", strings.Repeat("z", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		name, ok := rolloutFile(id, spansSuffix)
		if !ok {
			return
		}
		// One plain name: no separator or NUL, not hidden, not "." or ".."
		// ("0..spans.jsonl", from the valid id "0.", is a plain name).
		s := name.s
		if strings.ContainsAny(s, "/\\\x00") || strings.HasPrefix(s, ".") || s == ".." || len(s) > 255 {
			t.Fatalf("id %q became the file name %q", id, s)
		}
	})
}
