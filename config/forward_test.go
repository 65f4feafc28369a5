// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package config

import (
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func lookupMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// Unset (or empty), the command line is the one without forwarding, byte
// for byte: the effective configuration is Standalone's.
func TestForwardingUnsetChangesNothing(t *testing.T) {
	base := withDefault([]string{"otelcol-gym"}, Standalone)
	for _, env := range []map[string]string{nil, {ForwardEndpointEnv: ""}, {ForwardHeadersEnv: "a=b"}} {
		got, err := withForwarding(slices.Clone(base), Standalone, lookupMap(env), func(string, string) error {
			t.Fatal("no variable is set")
			return nil
		})
		if err != nil || !slices.Equal(got, base) {
			t.Errorf("%v: got %q, %v; want %q", env, got, err, base)
		}
	}
}

// Set, an overlay sends every pipeline of Standalone, after its own
// exporters, to its signal's gymforward connector, the receiver of a
// forwarding pipeline whose one exporter is the forward exporter, and passes
// each header's value by a variable of its own.
func TestForwardingOverlay(t *testing.T) {
	set := map[string]string{}
	args, err := withForwarding([]string{"otelcol-gym", "--config=yaml:S"}, Standalone,
		lookupMap(map[string]string{ForwardEndpointEnv: "http://127.0.0.1:6006", ForwardHeadersEnv: "Authorization=Basic%20cGs6c2s=, x-team = gym "}),
		func(k, v string) error { set[k] = v; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 3 || !strings.HasPrefix(args[2], "--config=yaml:") {
		t.Fatalf("args %q", args)
	}
	var overlay, standalone forwardingDoc
	if err := yaml.Unmarshal([]byte(strings.TrimPrefix(args[2], "--config=yaml:")), &overlay); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(Standalone), &standalone); err != nil {
		t.Fatal(err)
	}
	exp := overlay.Exporters[ForwardExporter]
	if exp.Endpoint != "${env:"+ForwardEndpointEnv+"}" {
		t.Errorf("endpoint %q", exp.Endpoint)
	}
	for k, ref := range exp.Headers {
		name := strings.TrimSuffix(strings.TrimPrefix(ref, "${env:"), "}")
		got := set[name]
		want := map[string]string{"Authorization": "Basic cGs6c2s=", "x-team": "gym"}[k]
		if got != want {
			t.Errorf("header %s: %q from %s, want %q", k, got, name, want)
		}
	}
	if len(exp.Headers) != 2 {
		t.Errorf("headers %v", exp.Headers)
	}
	if len(standalone.Service.Pipelines) != 3 || len(overlay.Service.Pipelines) != 6 {
		t.Fatalf("pipelines: standalone %v, overlay %v", standalone.Service.Pipelines, overlay.Service.Pipelines)
	}
	for name, p := range standalone.Service.Pipelines {
		connector := ForwardConnector + "/" + name
		want := append(slices.Clone(p.Exporters), connector)
		if got := overlay.Service.Pipelines[name].Exporters; !slices.Equal(got, want) {
			t.Errorf("pipeline %s: exporters %q, want %q", name, got, want)
		}
		fwd := overlay.Service.Pipelines[name+"/forward"]
		if !slices.Equal(fwd.Receivers, []string{connector}) || !slices.Equal(fwd.Exporters, []string{ForwardExporter}) {
			t.Errorf("pipeline %s/forward: %+v", name, fwd)
		}
		if got, want := overlay.Connectors[connector].Destination, "${env:"+ForwardEndpointEnv+"}/v1/"+name; got != want {
			t.Errorf("%s destination %q, want %q", connector, got, want)
		}
	}
}

// forwardingDoc is what the tests read of a configuration.
type forwardingDoc struct {
	Connectors map[string]struct {
		Destination string `yaml:"destination"`
	} `yaml:"connectors"`
	Exporters map[string]struct {
		Endpoint       string            `yaml:"endpoint"`
		TracesEndpoint string            `yaml:"traces_endpoint"`
		Headers        map[string]string `yaml:"headers"`
	} `yaml:"exporters"`
	Service struct {
		Pipelines map[string]struct {
			Receivers []string `yaml:"receivers"`
			Exporters []string `yaml:"exporters"`
		} `yaml:"pipelines"`
	} `yaml:"service"`
}

// A signal's own variable alone forwards that signal alone, to its URL.
func TestForwardingOneSignal(t *testing.T) {
	args, err := withForwarding([]string{"otelcol-gym"}, Standalone,
		lookupMap(map[string]string{ForwardTracesEndpointEnv: "http://127.0.0.1:6006/v1/traces"}),
		func(string, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	var overlay forwardingDoc
	if err := yaml.Unmarshal([]byte(strings.TrimPrefix(args[1], "--config=yaml:")), &overlay); err != nil {
		t.Fatal(err)
	}
	exp := overlay.Exporters[ForwardExporter]
	if exp.TracesEndpoint != "${env:"+ForwardTracesEndpointEnv+"}" || exp.Endpoint != "" {
		t.Errorf("exporter %+v", exp)
	}
	if len(overlay.Service.Pipelines) != 2 || len(overlay.Service.Pipelines["traces"].Exporters) == 0 || len(overlay.Service.Pipelines["traces/forward"].Receivers) == 0 {
		t.Errorf("pipelines %+v", overlay.Service.Pipelines)
	}
	if len(overlay.Connectors) != 1 || overlay.Connectors[ForwardConnector+"/traces"].Destination != "${env:"+ForwardTracesEndpointEnv+"}" {
		t.Errorf("connectors %+v", overlay.Connectors)
	}
}

// TestForwardingHeadersRefused: a malformed header is refused, naming the
// variable and the pair, never what the pair holds (a header may be a
// secret, design §6).
func TestForwardingHeadersRefused(t *testing.T) {
	for h, want := range map[string]string{
		"Bearer s3cr3t":                     "pair 1 has no '='",
		"x-team=gym,Authorization s3cr3t=v": "the key of pair 2 is not a header name",
		"Authorization=Bearer%zzs3cr3t":     "the value of Authorization (pair 1) is not percent-encoded",
	} {
		_, err := withForwarding([]string{"x"}, Standalone, lookupMap(map[string]string{ForwardEndpointEnv: "http://h", ForwardHeadersEnv: h}),
			func(string, string) error { return nil })
		if err == nil || !strings.Contains(err.Error(), ForwardHeadersEnv) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", h, err, want)
			continue
		}
		for _, secret := range []string{"s3cr3t", "Bearer", "%zz"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%q: the error shows %q: %v", h, secret, err)
			}
		}
	}
}
