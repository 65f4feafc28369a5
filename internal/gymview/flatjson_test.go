// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseRolloutLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		flat bool // read by decodeFlat, not encoding/json
		ok   bool
		want rolloutLine
	}{
		{line: `{"rollout_id":"12-3","run_id":"r","error_count":2,"status":"ERROR","extra":[1,{"a":2}]}`, ok: true,
			want: rolloutLine{RolloutID: "12-3", RunID: "r", ErrorCount: 2, Status: "ERROR"}},
		{line: `{"rollout_id":"12-3","run_id":"r","error_count":2,"status":"ERROR","extra":true}`, flat: true, ok: true,
			want: rolloutLine{RolloutID: "12-3", RunID: "r", ErrorCount: 2, Status: "ERROR"}},
		{line: ` { "rollout_id" : "a" , "name" : null } `, flat: true, ok: true, want: rolloutLine{RolloutID: "a"}},
		{line: `{}`, flat: true, ok: true},
		{line: `{"rollout_id":"a\"b"}`, ok: true, want: rolloutLine{RolloutID: `a"b`}},
		{line: `{"rollout_id":"a\u003cb"}`, ok: true, want: rolloutLine{RolloutID: `a<b`}},
		{line: `{"Rollout_ID":"a"}`, ok: true, want: rolloutLine{RolloutID: "a"}},
		{line: `{"rollout_id":"a","rollout_id":"b"}`, flat: true, ok: true, want: rolloutLine{RolloutID: "b"}},
		{line: `{"error_count":1.0}`, ok: false},
		{line: `{"error_count":"1"}`, ok: false},
		{line: `{"error_count":01}`, ok: false},
		{line: `{"rollout_id":"a"} x`, ok: false},
		{line: `{"rollout_id":"a",}`, ok: false},
		{line: `{"rollout_id":"a"`, ok: false},
		{line: `[]`, ok: false},
		{line: "{\"rollout_id\":\"a\x01\"}", ok: false},
		{line: "{\"rollout_id\":\"\xff\"}", ok: true, want: rolloutLine{RolloutID: "\uFFFD"}},
	} {
		var l rolloutLine
		assert.Equal(t, tc.flat, decodeFlat([]byte(tc.line), l.set), "decodeFlat %s", tc.line)
		got, ok := parseRolloutLine([]byte(tc.line))
		assert.Equal(t, tc.ok, ok, tc.line)
		assert.Equal(t, tc.want, got, tc.line)
	}
}

// FuzzRolloutLine: whenever decodeFlat reads a line, encoding/json reads it
// too, to the same values.
func FuzzRolloutLine(f *testing.F) {
	for _, s := range []string{
		rolloutsLine("r1", "0-0", "OK", 0, "01.000000"),
		`{"rollout_id":"a","error_count":-3,"x":null,"y":false}`,
		`{"ROLLOUT_ID":"a"}`, `{"error_count":1e2}`, `{"name":"\u00e9"}`, `{"a":"b"}`, ` {} `,
		`{"rollout_id":"a","time_split_ms":{"model":1.5,"tools":0,"verify":2e-3,"agent":-0.0,"queue":1E+2,"other":0},"x":{}}`,
		`{"time_split_ms":null,"time_split_ms":{ "model" : 1 } }`, `{"time_split_ms":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast rolloutLine
		if !decodeFlat(line, fast.set) {
			return
		}
		var ref rolloutLine
		if err := json.Unmarshal(line, &ref); err != nil {
			t.Fatalf("decodeFlat read %q, encoding/json refused it: %v", line, err)
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Fatalf("%q: decodeFlat %+v, encoding/json %+v", line, fast, ref)
		}
	})
}
