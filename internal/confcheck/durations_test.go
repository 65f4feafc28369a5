// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package confcheck

import (
	"strings"
	"testing"

	"github.com/otelcol-gym/otelcol-gym/internal/confcheck/confchecktest"
)

func TestDurations(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want string // "" when accepted; else a part of the error
	}{
		{"settle: 5s", ""},
		{"settle: 1h30m", ""},
		{"settle: 250ms", ""},
		{"settle: 0", ""},
		{"settle: -1s", ""}, // a valid duration; the component's Validate refuses it
		{"other: 5 seconds", ""},
		{"settle:", ""},
		{"settle: 5 seconds", `settle: "5 seconds" is not a duration: write a number and a unit with no space, e.g. "5s", "250ms" or "1h30m" (units: ns, us or µs, ms, s, m, h)`},
		{"settle: 5sec", `settle: "5sec" is not a duration`},
		{"settle: 1d", `settle: "1d" is not a duration`},
		{"settle: 5", `settle: 5 has no unit (a bare number is read as nanoseconds): write a number and a unit`},
		{"settle: 1.5", `settle: 1.5 has no unit`},
		{"split: {job_ttl: 1 day}", `split.job_ttl: "1 day" is not a duration`},
	} {
		err := Durations(confchecktest.FromYAML(t, tc.yaml), "settle", "split::job_ttl")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.yaml, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
}

func TestDurationsNamesEveryBadKey(t *testing.T) {
	err := Durations(confchecktest.FromYAML(t, "a: 1 s\nb: 2\nc: 3s"), "a", "b", "c")
	if err == nil || !strings.Contains(err.Error(), "a: ") || !strings.Contains(err.Error(), "b: ") || strings.Contains(err.Error(), "c: ") {
		t.Errorf("error %v, want a and b named and not c", err)
	}
}
