// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package config

import (
	"slices"
	"testing"
)

func TestWithDefault(t *testing.T) {
	const def = "--config=yaml:DEFAULT"
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"otelcol-gym"}, []string{"otelcol-gym", def}},
		{[]string{"otelcol-gym", "--feature-gates=x"}, []string{"otelcol-gym", "--feature-gates=x", def}},
		{[]string{"otelcol-gym", "--set=processors.gym.wait=1s"}, []string{"otelcol-gym", "--set=processors.gym.wait=1s", def}},
		{[]string{"otelcol-gym", "--config", "f.yaml"}, []string{"otelcol-gym", "--config", "f.yaml"}},
		{[]string{"otelcol-gym", "--config=f.yaml"}, []string{"otelcol-gym", "--config=f.yaml"}},
		{[]string{"otelcol-gym", "components"}, []string{"otelcol-gym", "components"}},
		{[]string{"otelcol-gym", "validate", "--config=f.yaml"}, []string{"otelcol-gym", "validate", "--config=f.yaml"}},
		{[]string{"otelcol-gym", "validate"}, []string{"otelcol-gym", "validate", def}},
		{[]string{"otelcol-gym", "validate", "--set=processors.gym.wait=1s"}, []string{"otelcol-gym", "validate", "--set=processors.gym.wait=1s", def}},
		{[]string{"otelcol-gym", "--help"}, []string{"otelcol-gym", "--help"}},
		{[]string{"otelcol-gym", "-v"}, []string{"otelcol-gym", "-v"}},
		{[]string{}, []string{}},
	} {
		got := withDefault(tc.args, "DEFAULT")
		if !slices.Equal(got, tc.want) {
			t.Errorf("withDefault(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
