// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package split // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"

import (
	"strconv"
	"strings"
)

// PreviousAttempt returns the id of the attempt before R = "<task>-<n>-a<k>":
// "<task>-<n>" for k = 1, "<task>-<n>-a<k-1>" for k > 1.
func PreviousAttempt(r string) (string, bool) {
	base, k, ok := splitAttempt(r)
	if !ok || k < 1 {
		return "", false
	}
	if k == 1 {
		return base, true
	}
	return base + "-a" + strconv.Itoa(k-1), true
}

// AttemptIndex orders rollouts so earlier attempts are decided first: k of
// "<task>-<n>-a<k>", else 0.
func AttemptIndex(r string) int {
	if _, k, ok := splitAttempt(r); ok {
		return k
	}
	return 0
}

// splitAttempt splits "<base>-a<k>" where base has the form "<task>-<n>".
func splitAttempt(r string) (string, int, bool) {
	i := strings.LastIndex(r, "-a")
	if i <= 0 || i+2 >= len(r) {
		return "", 0, false
	}
	k, err := strconv.Atoi(r[i+2:])
	if err != nil || k < 0 || strconv.Itoa(k) != r[i+2:] {
		return "", 0, false
	}
	base := r[:i]
	j := strings.LastIndexByte(base, '-')
	if j <= 0 || j+1 >= len(base) {
		return "", 0, false
	}
	if _, err := strconv.Atoi(base[j+1:]); err != nil {
		return "", 0, false
	}
	return base, k, true
}
