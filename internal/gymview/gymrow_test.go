// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type readRow struct {
	members map[string]string
	err     error
}

// readRows reads every row of s, keeping the members named in keep.
func readRows(t *testing.T, s string, keep ...string) ([]readRow, int64) {
	t.Helper()
	r := newRowReader(strings.NewReader(s), func(k string) bool {
		for _, x := range keep {
			if x == k {
				return true
			}
		}
		return false
	})
	var out []readRow
	for {
		m, err := r.next()
		if errors.Is(err, io.EOF) || errors.Is(err, errIncomplete) {
			if errors.Is(err, errIncomplete) {
				out = append(out, readRow{err: err})
			}
			return out, r.consumed()
		}
		row := readRow{err: err}
		if err == nil {
			row.members = map[string]string{}
			for k, v := range m {
				row.members[k] = string(v)
			}
		}
		out = append(out, row)
		require.Less(t, len(out), 1000)
	}
}

func TestRowReader(t *testing.T) {
	text := strings.Join([]string{
		`{"reward": 1.0, "response": {"output": [{"text": "a \"b\" \u00e9\n"}, 1e-3, -0, true, null]}, "failure_kind": null}`,
		``,
		`   `,
		`{"reward":0,"x":[[[]]],"y":{}}`,
		`{"reward":01}`,
		`{"reward":1,}`,
		`[1]`,
		`{"reward":1} x`,
		`{"reward":"\x"}`,
		"{\"a\":\"\t\"}",
		`{"a":tru}`,
		`{"a":1.}`,
		`{"a":[1,]}`,
		`{"a":{"b":1,}}`,
		`{"a":{"b" 1}}`,
		`{"a":[1}`,
		`{"rew\u0061rd":2}`,
		`{}`,
		`{"reward":3}`,
		`{"reward":4`,
	}, "\n")
	rows, consumed := readRows(t, text, "reward", "failure_kind")
	want := []readRow{
		{members: map[string]string{"reward": "1.0", "failure_kind": "null"}},
		{members: map[string]string{"reward": "0"}},
		{err: errSyntax}, {err: errSyntax}, {err: errSyntax}, {err: errSyntax}, {err: errSyntax},
		{err: errSyntax}, {err: errSyntax}, {err: errSyntax}, {err: errSyntax}, {err: errSyntax},
		{err: errSyntax}, {err: errSyntax},
		{members: map[string]string{"reward": "2"}},
		{members: map[string]string{}},
		{members: map[string]string{"reward": "3"}},
		{err: errIncomplete},
	}
	assert.Equal(t, want, rows)
	assert.EqualValues(t, strings.LastIndex(text, "\n")+1, consumed, "the torn last row is not consumed")
}

// TestRowReaderHugeRow: a row far larger than any bound (a 20 MiB string, a
// 2 MiB array) is read member by member; what is kept stays within
// maxMemberBytes, a long string kept is cut on a character.
func TestRowReaderHugeRow(t *testing.T) {
	long := strings.Repeat(`x\"é`, 8<<20/5)
	var b strings.Builder
	b.WriteString(`{"_ng_task_index":3,"response":{"output_text":"` + long + `"},"failure_reason":"` + long + `",`)
	b.WriteString(`"ng_perf":[` + strings.Repeat("1,", 1<<20) + `1],"reward":0.5}` + "\n")
	b.WriteString(`{"reward":1}` + "\n")
	r := newRowReader(strings.NewReader(b.String()), func(string) bool { return true })
	m, err := r.next()
	require.NoError(t, err)
	assert.Equal(t, "3", string(m["_ng_task_index"]))
	assert.Equal(t, "0.5", string(m["reward"]))
	assert.NotContains(t, m, "ng_perf", "a container longer than the bound is left out")
	reason := m["failure_reason"]
	assert.LessOrEqual(t, len(reason), maxMemberBytes+1)
	var s string
	require.NoError(t, json.Unmarshal(reason, &s), "a cut string is still a JSON string")
	assert.True(t, strings.HasPrefix(strings.Repeat(`x"é`, 8<<20/5), s), "cut on a character: %q", s[len(s)-10:])
	assert.Greater(t, len(s), maxMemberBytes/2)
	m, err = r.next()
	require.NoError(t, err)
	assert.Equal(t, "1", string(m["reward"]))
	_, err = r.next()
	assert.ErrorIs(t, err, io.EOF)
}

// FuzzRowReader: on one line, the reader agrees with encoding/json: a
// valid object is read, with the members kept as encoding/json reads them;
// anything else is malformed.
func FuzzRowReader(f *testing.F) {
	for _, s := range []string{
		`{"reward":1.5,"failure_kind":"x","ng_perf":{"num_turns":2}}`,
		`{"a":[1,{"b":"\u00e9\"\\"}],"reward":-0.0e+1}`,
		`{"reward":01}`, `[]`, `{"a":"b"} {}`, ` { } `, `{"reward":"` + strings.Repeat("a", 300) + `"}`,
		`{"rew\u0061rd":true,"reward":null}`, "{\"a\":\"\xff\"}",
		// Names at the bound, past it, and within it only once decoded.
		`{"` + strings.Repeat("k", maxKeyBytes) + `":1,"` + strings.Repeat("k", maxKeyBytes+1) + `":2}`,
		`{"` + strings.Repeat(`\u006b`, maxKeyBytes) + `":1,"` + strings.Repeat("k", maxKeyBytes) + `":2}`,
		`{"` + strings.Repeat("k", maxKeyBytes+1) + `":1,"` + strings.Repeat(`\u006b`, maxKeyBytes+1) + `":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		r := newRowReader(bytes.NewReader(append(bytes.Clone(line), '\n')), func(k string) bool { return k != "a" })
		got, err := r.next()
		var ref map[string]json.RawMessage
		refErr := json.Unmarshal(line, &ref)
		isBlank := len(bytes.Trim(line, " \t\r")) == 0
		switch {
		case isBlank:
			if !errors.Is(err, io.EOF) {
				t.Fatalf("%q: a blank line is no row, got %v", line, err)
			}
			return
		case refErr != nil || ref == nil:
			if err == nil {
				t.Fatalf("%q: read as a row, encoding/json: %v", line, refErr)
			}
			return
		case err != nil:
			t.Fatalf("%q: %v, encoding/json reads it", line, err)
		}
		want := 0
		for k, v := range ref {
			if k == "a" {
				continue
			}
			if len(k) > maxKeyBytes {
				assert.NotContains(t, got, k, "%q: a name longer than the bound is left out", line)
				continue
			}
			want++
			var a, b any
			if json.Unmarshal(v, &a) != nil || json.Unmarshal(got[k], &b) != nil {
				t.Fatalf("%q: member %q: %q vs %q", line, k, got[k], v)
			}
			if len(v) <= maxMemberBytes {
				assert.Equal(t, a, b, "%q: member %q", line, k)
			}
		}
		assert.Len(t, got, want)
		assert.EqualValues(t, len(line)+1, r.consumed())
	})
}
