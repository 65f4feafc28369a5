// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package listencheck tells a user, before the collector starts on the
// embedded default (design §3), that an address it listens on is taken:
// which address, by which process when this machine says, whether a
// collector already answers on the health-check address, and the --set flag
// that moves each one. Without it, the collector stops on the first address
// it cannot bind with a logged error and its stack trace, naming neither
// the other process nor a way out.
package listencheck // import "github.com/otelcol-gym/otelcol-gym/internal/listencheck"

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
)

// Listener is an address a collector configuration listens on.
type Listener struct {
	// Key is the configuration key that sets it, as --set names it.
	Key  string
	Addr string
}

// telemetryKey is the key of the collector's own metrics endpoint, which a
// --set cannot move (it is in a list) but can turn off.
const telemetryKey = "service::telemetry::metrics"

// Listeners returns the addresses configYAML listens on, sorted by key: every
// receiver's and extension's endpoint, and the collector's own Prometheus
// metrics, with the --set flags of args applied.
func Listeners(configYAML string, args []string) ([]Listener, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(configYAML), &cfg); err != nil {
		return nil, fmt.Errorf("reading the configuration: %w", err)
	}
	var ls []Listener
	for _, section := range []string{"receivers", "extensions"} {
		walkEndpoints(section, cfg[section], &ls)
	}
	if addr := telemetryAddr(cfg); addr != "" {
		ls = append(ls, Listener{Key: telemetryKey, Addr: addr})
	}
	sets := setFlags(args)
	out := ls[:0]
	for _, l := range ls {
		if v, ok := sets[l.Key]; ok {
			l.Addr = v
		}
		if l.Key == telemetryKey && sets[telemetryKey+"::level"] == "none" {
			continue
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func walkEndpoints(path string, v any, out *[]Listener) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, child := range m {
		if s, ok := child.(string); ok && k == "endpoint" {
			if _, _, err := net.SplitHostPort(s); err == nil {
				*out = append(*out, Listener{Key: path + "::endpoint", Addr: s})
			}
			continue
		}
		walkEndpoints(path+"::"+k, child, out)
	}
}

// telemetryAddr is host:port of the first Prometheus pull reader of
// service::telemetry::metrics, or "".
func telemetryAddr(cfg map[string]any) string {
	dig := func(v any, keys ...string) any {
		for _, k := range keys {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		}
		return v
	}
	readers, _ := dig(cfg, "service", "telemetry", "metrics", "readers").([]any)
	for _, r := range readers {
		prom, ok := dig(r, "pull", "exporter", "prometheus").(map[string]any)
		if !ok {
			continue
		}
		host, _ := prom["host"].(string)
		if port, ok := prom["port"].(int); ok {
			return net.JoinHostPort(host, strconv.Itoa(port))
		}
	}
	return ""
}

// setFlags are the --set key=value flags of args (before a lone "--").
func setFlags(args []string) map[string]string {
	sets := map[string]string{}
	for i := 0; i < len(args); i++ {
		var kv string
		switch a := args[i]; {
		case a == "--":
			return sets
		case a == "--set" && i+1 < len(args):
			i++
			kv = args[i]
		case strings.HasPrefix(a, "--set="):
			kv = strings.TrimPrefix(a, "--set=")
		default:
			continue
		}
		if k, v, ok := strings.Cut(kv, "="); ok {
			sets[k] = v
		}
	}
	return sets
}

// Taken is a listener whose address another process holds.
type Taken struct {
	Listener
	Owner string // "otelcol-gym (pid 4242)", or "" when this machine does not say
}

// Check binds each listener's address for a moment and returns those that
// are taken (in use: another listener holds them).
func Check(ls []Listener) []Taken {
	var taken []Taken
	for _, l := range ls {
		lis, err := net.Listen("tcp", l.Addr)
		if err == nil {
			lis.Close()
			continue
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			taken = append(taken, Taken{Listener: l, Owner: owner(l.Addr)})
		}
	}
	return taken
}

// CollectorAnswers reports whether a collector's health_check extension
// answers on addr.
func CollectorAnswers(addr string) bool {
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var b [256]byte
	n, _ := resp.Body.Read(b[:])
	return resp.StatusCode == http.StatusOK && strings.Contains(string(b[:n]), "Server available")
}

// Explain is what a user is told when addresses of ls are taken, or "" when
// none is. healthKey is the key of the health check's endpoint.
func Explain(command string, ls []Listener, taken []Taken, healthKey string) string {
	if len(taken) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: cannot start: ", command)
	for i, t := range taken {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.Addr)
		if t.Owner != "" {
			fmt.Fprintf(&b, " (taken by %s)", t.Owner)
		}
	}
	if len(taken) == 1 {
		b.WriteString(" is in use.\n")
	} else {
		b.WriteString(" are in use.\n")
	}
	for _, l := range ls {
		if l.Key == healthKey && CollectorAnswers(l.Addr) {
			fmt.Fprintf(&b, "A collector already answers on %s (its health check): when it is an otelcol-gym, Gym's processes can send to it as it is; stop it to start this one here.\n", l.Addr)
		}
	}
	b.WriteString("To run this one beside it, move what is taken:\n")
	for _, t := range taken {
		if t.Key == telemetryKey {
			fmt.Fprintf(&b, "  %s (the collector's own metrics): --set=%s::level=none turns them off\n", t.Addr, telemetryKey)
			continue
		}
		host, _, _ := net.SplitHostPort(t.Addr)
		fmt.Fprintf(&b, "  %s: --set=%s=%s\n", t.Addr, t.Key, net.JoinHostPort(host, "<another port>"))
	}
	return b.String()
}
