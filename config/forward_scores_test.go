// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package config

import (
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Gym's scores go to the traces' backend when it takes them: the overlay
// adds the gymscores extension with the traces URL's base and the same
// headers, beside Standalone's extensions; the kind is named by
// ForwardBackendEnv or inferred from MLflow's header.
func TestForwardingScores(t *testing.T) {
	var standalone struct {
		Service struct {
			Extensions []string `yaml:"extensions"`
		} `yaml:"service"`
	}
	if err := yaml.Unmarshal([]byte(Standalone), &standalone); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		env        map[string]string
		kind, base string // kind "": no scores
	}{
		{"mlflow inferred from its header", map[string]string{ForwardTracesEndpointEnv: "http://127.0.0.1:5000/v1/traces", ForwardHeadersEnv: "x-mlflow-experiment-id=0"}, "mlflow", "http://127.0.0.1:5000"},
		{"phoenix named", map[string]string{ForwardTracesEndpointEnv: "http://127.0.0.1:6006/v1/traces", ForwardBackendEnv: "phoenix"}, "phoenix", "http://127.0.0.1:6006"},
		{"base URL", map[string]string{ForwardEndpointEnv: "http://127.0.0.1:6006/", ForwardBackendEnv: "Phoenix"}, "phoenix", "http://127.0.0.1:6006"},
		{"none", map[string]string{ForwardTracesEndpointEnv: "http://127.0.0.1:5000/v1/traces", ForwardHeadersEnv: "x-mlflow-experiment-id=0", ForwardBackendEnv: "none"}, "", ""},
		{"another backend", map[string]string{ForwardTracesEndpointEnv: "http://127.0.0.1:4318/v1/traces"}, "", ""},
		{"traces not forwarded", map[string]string{ForwardMetricsEndpointEnv: "http://127.0.0.1:5000/v1/metrics", ForwardBackendEnv: "mlflow"}, "", ""},
	} {
		set := map[string]string{}
		args, err := withForwarding([]string{"otelcol-gym"}, Standalone, lookupMap(tc.env), func(k, v string) error { set[k] = v; return nil })
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var overlay struct {
			Extensions map[string]struct {
				Backend  string            `yaml:"backend"`
				Endpoint string            `yaml:"endpoint"`
				Headers  map[string]string `yaml:"headers"`
			} `yaml:"extensions"`
			Service struct {
				Extensions []string `yaml:"extensions"`
			} `yaml:"service"`
		}
		if err := yaml.Unmarshal([]byte(strings.TrimPrefix(args[len(args)-1], "--config=yaml:")), &overlay); err != nil {
			t.Fatal(err)
		}
		ext, ok := overlay.Extensions[ScoresExtension]
		if tc.kind == "" {
			if ok || overlay.Service.Extensions != nil {
				t.Errorf("%s: scores %+v, extensions %v", tc.name, ext, overlay.Service.Extensions)
			}
			continue
		}
		if ext.Backend != tc.kind || ext.Endpoint != "${env:"+forwardScoresEnv+"}" || set[forwardScoresEnv] != tc.base {
			t.Errorf("%s: %+v, endpoint %q", tc.name, ext, set[forwardScoresEnv])
		}
		if want := append(slices.Clone(standalone.Service.Extensions), ScoresExtension); !slices.Equal(overlay.Service.Extensions, want) {
			t.Errorf("%s: extensions %v, want %v", tc.name, overlay.Service.Extensions, want)
		}
		if h, ok := tc.env[ForwardHeadersEnv]; ok && len(ext.Headers) != strings.Count(h, ",")+1 {
			t.Errorf("%s: headers %v", tc.name, ext.Headers)
		}
	}
}

// A backend kind that is none of the three stops the binary, naming the
// variable and the choices.
func TestForwardingScoresBackendRefused(t *testing.T) {
	_, err := withForwarding([]string{"otelcol-gym"}, Standalone,
		lookupMap(map[string]string{ForwardTracesEndpointEnv: "http://127.0.0.1:5000/v1/traces", ForwardBackendEnv: "langfuse"}),
		func(string, string) error { return nil })
	if err == nil || !strings.Contains(err.Error(), ForwardBackendEnv) || !strings.Contains(err.Error(), "phoenix") {
		t.Fatalf("got %v", err)
	}
}
