// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package hostport

import (
	"testing"

	"github.com/stretchr/testify/assert"

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

func TestHostPorts(t *testing.T) {
	m := pcommon.NewMap()
	m.PutStr("url.full", "http://LOCALHOST:8000/run?x=1")
	assert.Equal(t, "localhost:8000", Client(m))
	m = pcommon.NewMap()
	m.PutStr("http.url", "https://api.example.com/v1")
	assert.Equal(t, "api.example.com:443", Client(m))
	m = pcommon.NewMap()
	m.PutStr("server.address", "::1")
	m.PutInt("server.port", 9)
	assert.Equal(t, "[::1]:9", Client(m))
	assert.Equal(t, "[::1]:9", Server(m))
	m = pcommon.NewMap()
	m.PutStr("http.host", "127.0.0.1:8002")
	assert.Equal(t, "127.0.0.1:8002", Server(m))
	m = pcommon.NewMap()
	m.PutStr("url.full", "not a url")
	assert.Empty(t, Client(m))
}

func TestURLHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8001/ng-rollout/0-0/v1/responses": "127.0.0.1:8001",
		"http://Model.Local/v1":                             "model.local:80",
		"https://user:pw@api.example.com?x=1":               "api.example.com:443",
		"http://[::1]:8000/run":                             "[::1]:8000",
		"http://[::1]/run":                                  "[::1]:80",
		"grpc://judge:9000":                                 "judge:9000",
		"/relative/path":                                    "",
		"http:///nohost":                                    "",
		"http://host:/x":                                    "",
	} {
		assert.Equal(t, want, fromURL(in), in)
	}
}
