// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Issue #8, design §3 and §5.1: the gateway's receiver requires TLS and the
// bearer token; capture files and directories get restrictive modes; every
// listener of the shipped configs is on loopback.

// secRequest is one root span of rollout sec-<n>, so each attempt has its
// own span id and rollout file.
func secRequest(n int) (ptraceotlp.ExportRequest, string) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/simple_agent")
	rs.Resource().Attributes().PutStr("nemo.run.id", "sec-run")
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetName("gym.rollout")
	s.SetTraceID(pcommon.TraceID{0x5e, byte(n)})
	sid := pcommon.SpanID{0x5e, 0, 0, 0, 0, 0, 0, byte(n + 1)}
	s.SetSpanID(sid)
	now := time.Now()
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Second)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	s.Attributes().PutStr("nemo.gym.rollout.id", "sec-"+strconv.Itoa(n))
	return ptraceotlp.NewExportRequestFromTraces(td), hex.EncodeToString(sid[:])
}

func caPool(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	return pool
}

// TestGatewayRequiresTLSAndToken: config/gateway.yaml as shipped (ports
// rewritten) with a certificate made here. Over gRPC and HTTP, a plaintext
// client, a TLS client without a token and one with a wrong token are
// refused and their spans never written; a TLS client with the token is
// accepted. The files it writes have the default modes.
func TestGatewayRequiresTLSAndToken(t *testing.T) {
	backend := startFakeBackend(t)
	p := newPorts(t)
	env := append(shippedEnv(t, "http://127.0.0.1:9"), "OTELCOL_GYM_BACKEND="+backend.addr)
	captureDir := envValue(env, "NEMO_GYM_CAPTURE_DIR")
	token := envValue(env, "OTELCOL_GYM_TOKEN")
	col := startCollector(t, p, env, "--config", onFreePorts(t, "gateway.yaml", p))
	pool := caPool(t, envValue(env, "OTELCOL_GYM_TLS_CA"))
	grpcAddr := fmt.Sprintf("127.0.0.1:%d", p.GRPC)

	refused, accepted := []string{}, []string{}
	n := 0
	grpcExport := func(creds credentials.TransportCredentials, auth string) error {
		conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(creds))
		require.NoError(t, err)
		defer conn.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if auth != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", auth)
		}
		n++
		req, id := secRequest(n)
		_, err = ptraceotlp.NewGRPCClient(conn).Export(ctx, req)
		if err == nil {
			accepted = append(accepted, id)
		} else {
			refused = append(refused, id)
		}
		return err
	}
	tlsCreds := credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})

	t.Run("grpc", func(t *testing.T) {
		err := grpcExport(insecure.NewCredentials(), "Bearer "+token)
		assert.Error(t, err, "a plaintext client is refused")
		err = grpcExport(tlsCreds, "")
		assert.Equal(t, codes.Unauthenticated, status.Code(err), "TLS without a token: %v", err)
		err = grpcExport(tlsCreds, "Bearer wrong-"+token)
		assert.Equal(t, codes.Unauthenticated, status.Code(err), "TLS with a wrong token: %v", err)
		err = grpcExport(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12}), "Bearer "+token)
		assert.Error(t, err, "a client that does not trust the CA is refused (unknown authority)")
		assert.NoError(t, grpcExport(tlsCreds, "Bearer "+token), "TLS with the token is accepted")
	})

	httpExport := func(scheme, auth string, trust bool) (int, error) {
		n++
		req, id := secRequest(n)
		body, err := req.MarshalProto()
		require.NoError(t, err)
		hreq, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
			fmt.Sprintf("%s://127.0.0.1:%d/v1/traces", scheme, p.HTTP), bytes.NewReader(body))
		require.NoError(t, err)
		hreq.Header.Set("Content-Type", "application/x-protobuf")
		if auth != "" {
			hreq.Header.Set("Authorization", auth)
		}
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if trust {
			cfg.RootCAs = pool
		}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := client.Do(hreq)
		code := 0
		if err == nil {
			code = resp.StatusCode
			resp.Body.Close()
		}
		if code == http.StatusOK {
			accepted = append(accepted, id)
		} else {
			refused = append(refused, id)
		}
		return code, err
	}
	t.Run("http", func(t *testing.T) {
		code, _ := httpExport("http", "Bearer "+token, true)
		assert.NotEqual(t, http.StatusOK, code, "plaintext HTTP is refused")
		code, err := httpExport("https", "", true)
		assert.Equal(t, http.StatusUnauthorized, code, "no token: %v", err)
		code, err = httpExport("https", "Bearer wrong-"+token, true)
		assert.Equal(t, http.StatusUnauthorized, code, "wrong token: %v", err)
		_, err = httpExport("https", "Bearer "+token, false)
		assert.Error(t, err, "a client that does not trust the CA fails the handshake")
		code, err = httpExport("https", "Bearer "+token, true)
		assert.Equal(t, http.StatusOK, code, "TLS with the token: %v", err)
	})
	require.NoError(t, col.stop())

	written, _ := spanLines(t, filepath.Join(captureDir, "spans.jsonl"))
	assert.Len(t, accepted, 2)
	for _, id := range accepted {
		assert.Equal(t, 1, written[id], "accepted span %s written once", id)
	}
	for _, id := range refused {
		assert.Zero(t, written[id], "refused span %s was written", id)
	}

	// Modes (design §3, §5.1): the capture dir the exporter created 0750, the
	// files 0640 (file_permissions, directory_permissions defaults).
	wantModes := map[string]os.FileMode{
		captureDir:                                  0o750,
		filepath.Join(captureDir, "spans.jsonl"):    0o640,
		filepath.Join(captureDir, "rollouts.jsonl"): 0o640,
	}
	for i := 1; i <= n; i++ {
		if _, err := os.Stat(filepath.Join(captureDir, fmt.Sprintf("sec-%d.spans.jsonl", i))); err == nil {
			wantModes[filepath.Join(captureDir, fmt.Sprintf("sec-%d.spans.jsonl", i))] = 0o640
		}
	}
	assert.Len(t, wantModes, 5, "two rollout files, of the two accepted exports")
	checkModes(t, wantModes)
}

func checkModes(t *testing.T, want map[string]os.FileMode) {
	t.Helper()
	for path, mode := range want {
		fi, err := os.Lstat(path)
		if !assert.NoError(t, err) {
			continue
		}
		assert.Equal(t, mode, fi.Mode().Perm(), "%s is %v", path, fi.Mode())
	}
}

// TestConfiguredPermissionsHonoured: file_permissions 0600 and
// directory_permissions 0700 are what the files and the created capture
// dir get, whatever the umask, written quoted or unquoted (YAML's octal
// integers).
func TestConfiguredPermissionsHonoured(t *testing.T) {
	for name, perms := range map[string]string{
		"quoted":   `file_permissions: "0600"` + "\n    " + `directory_permissions: "0700"`,
		"unquoted": "file_permissions: 0600\n    directory_permissions: 0700",
	} {
		t.Run(name, func(t *testing.T) {
			p := newPorts(t)
			captureDir := filepath.Join(t.TempDir(), "new", "captures")
			cfg := p.expand(`
extensions:
  health_check:
    endpoint: 127.0.0.1:${HEALTH}
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${GRPC}
processors:
  gym:
exporters:
  gymspans:
    capture_dir: ${CAPTURE_DIR}
    `+perms+`
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [gym]
      exporters: [gymspans]
  telemetry:
    metrics:
      level: none
`, captureDir)
			col := startCollector(t, p, nil, "--config", writeFile(t, t.TempDir(), "perm.yaml", cfg))
			conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", p.GRPC), grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			defer conn.Close()
			req, _ := secRequest(7)
			_, err = ptraceotlp.NewGRPCClient(conn).Export(t.Context(), req)
			require.NoError(t, err)
			require.NoError(t, col.stop())
			checkModes(t, map[string]os.FileMode{
				captureDir:                                     0o700,
				filepath.Join(captureDir, "spans.jsonl"):       0o600,
				filepath.Join(captureDir, "rollouts.jsonl"):    0o600,
				filepath.Join(captureDir, "sec-7.spans.jsonl"): 0o600,
			})
		})
	}
}

// listeningAddrs returns the local addresses of the TCP sockets pid listens
// on (from /proc/<pid>/fd and /proc/<pid>/net/tcp{,6}), as "hexip:port".
func listeningAddrs(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if ino, ok := strings.CutPrefix(l, "socket:["); ok && err == nil {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var out []string
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] { // 0A: LISTEN
				continue
			}
			out = append(out, fields[1])
		}
	}
	return out
}

// isLoopbackHex reports whether a /proc/net/tcp{,6} local address is
// 127.0.0.0/8 or ::1 (or ::ffff:127.x).
func isLoopbackHex(addr string) bool {
	ip, _, _ := strings.Cut(addr, ":")
	switch len(ip) {
	case 8: // little-endian IPv4: the last byte printed first is the first octet
		return strings.HasSuffix(ip, "7F")
	case 32:
		return ip == "00000000000000000000000001000000" || (strings.HasPrefix(ip, "0000000000000000FFFF0000") && strings.HasSuffix(ip, "7F"))
	}
	return false
}

// TestShippedListenersOnLoopback: started as shipped (ports rewritten), the
// standalone, forwarder and gateway configs listen only on loopback (design §3).
func TestShippedListenersOnLoopback(t *testing.T) {
	for _, file := range []string{"standalone.yaml", "forwarder.yaml", "agent.yaml", "gateway.yaml"} {
		t.Run(file, func(t *testing.T) {
			p := newPorts(t)
			col := startCollector(t, p, shippedEnv(t, "http://127.0.0.1:9"), "--config", onFreePorts(t, file, p))
			addrs := listeningAddrs(t, col.cmd.Process.Pid)
			assert.GreaterOrEqual(t, len(addrs), 3, "receivers, health check and metrics listen: %v", addrs)
			for _, a := range addrs {
				assert.True(t, isLoopbackHex(a), "%s listens on %s, not loopback", file, a)
			}
			require.NoError(t, col.stop())
		})
	}
}
