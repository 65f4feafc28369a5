// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymconv

import (
	"regexp"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The hand-written matcher is the anchored pattern.
func TestValidRolloutIDIsThePattern(t *testing.T) {
	re := regexp.MustCompile(`^(?:` + RolloutIDPattern + `)$`)
	cases := []string{"", "0-0", "12-3-a1", "a", ".a", "a.", "-", "_x", "a/b", "..", "a\x00", "é", "A.b_c-9", "a b", "x" + strings.Repeat("y", 300)}
	for _, s := range cases {
		if got, want := ValidRolloutID(s), re.MatchString(s); got != want {
			t.Errorf("ValidRolloutID(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

func FuzzValidRolloutID(f *testing.F) {
	re := regexp.MustCompile(`^(?:` + RolloutIDPattern + `)$`)
	for _, s := range []string{"0-0", "..", "a/b", "x\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidRolloutID(s), re.MatchString(s); got != want {
			t.Fatalf("ValidRolloutID(%q) = %v, the pattern says %v", s, got, want)
		}
		if SafeFileID(s) && (len(s) > MaxFileIDBytes || strings.ContainsAny(s, "/\\\x00") || s == "." || s == "..") {
			t.Fatalf("SafeFileID(%q) let an unsafe name through", s)
		}
	})
}

func TestSafeFileIDBound(t *testing.T) {
	if !SafeFileID(strings.Repeat("a", MaxFileIDBytes)) {
		t.Error("an id of MaxFileIDBytes bytes is refused")
	}
	if SafeFileID(strings.Repeat("a", MaxFileIDBytes+1)) {
		t.Error("an id of MaxFileIDBytes+1 bytes is accepted")
	}
}

func TestServiceFirstPresentWins(t *testing.T) {
	res := pcommon.NewMap()
	res.PutStr(ServiceNameAttribute, "gym-bench")
	attrs := DefaultServiceAttributes()
	if got := Service(res, attrs); got != "gym-bench" {
		t.Errorf("without an override: %q", got)
	}
	res.PutStr(ServiceOverrideAttribute, "")
	if got := Service(res, attrs); got != "gym-bench" {
		t.Errorf("an empty override is not present: %q", got)
	}
	res.PutStr(ServiceOverrideAttribute, "nemo-gym/policy_model")
	if got := Service(res, attrs); got != "nemo-gym/policy_model" {
		t.Errorf("the override comes first: %q", got)
	}
	res.PutInt("svc.id", 7)
	if got := Service(res, []string{"svc.id", ServiceNameAttribute}); got != "7" {
		t.Errorf("a non-string value is read as text: %q", got)
	}
	if got := Service(res, []string{"absent"}); got != "" {
		t.Errorf("none present: %q", got)
	}
}
