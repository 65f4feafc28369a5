// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package hostport

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs map[string]any
		want  string
	}{
		{"stable semconv, int port", map[string]any{"server.address": "Model.Local", "server.port": int64(8000)}, "model.local:8000"},
		{"old semconv, string port", map[string]any{"net.host.name": "127.0.0.1", "net.host.port": "9001"}, "127.0.0.1:9001"},
		{"stable wins over old", map[string]any{"server.address": "a", "server.port": int64(1), "net.host.name": "b", "net.host.port": int64(2)}, "a:1"},
		{"ipv6 is bracketed", map[string]any{"server.address": "::1", "server.port": int64(80)}, "[::1]:80"},
		{"http.host with a port", map[string]any{"http.host": "LOCALHOST:8080"}, "localhost:8080"},
		{"http.host without a port", map[string]any{"http.host": "localhost"}, ""},
		{"host without port", map[string]any{"server.address": "a"}, ""},
		{"empty port", map[string]any{"server.address": "a", "server.port": ""}, ""},
		{"port of another type", map[string]any{"server.address": "a", "server.port": 1.5}, ""},
		{"nothing", map[string]any{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := pcommon.NewMap()
			if err := m.FromRaw(tc.attrs); err != nil {
				t.Fatal(err)
			}
			if got := Server(m); got != tc.want {
				t.Errorf("Server(%v) = %q, want %q", tc.attrs, got, tc.want)
			}
		})
	}
}
