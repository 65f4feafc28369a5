// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package listencheck

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/otelcol-gym/otelcol-gym/config"
)

func TestListenersOfTheEmbeddedDefault(t *testing.T) {
	ls, err := Listeners(config.Standalone, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Listener{
		{"extensions::gymview::endpoint", "127.0.0.1:13180"},
		{"extensions::health_check::endpoint", "127.0.0.1:13133"},
		{"receivers::otlp::protocols::grpc::endpoint", "127.0.0.1:4317"},
		{"receivers::otlp::protocols::http::endpoint", "127.0.0.1:4318"},
		{"service::telemetry::metrics", "127.0.0.1:8888"},
	}
	if !slices.Equal(ls, want) {
		t.Errorf("Listeners(standalone.yaml) =\n%v\nwant\n%v", ls, want)
	}

	// --set moves an endpoint (both spellings) and turns the metrics off.
	args := []string{"otelcol-gym", "--set=receivers::otlp::protocols::grpc::endpoint=127.0.0.1:14317",
		"--set", "extensions::health_check::endpoint=127.0.0.1:23133", "--set=service::telemetry::metrics::level=none"}
	ls, err = Listeners(config.Standalone, args)
	if err != nil {
		t.Fatal(err)
	}
	want = []Listener{
		{"extensions::gymview::endpoint", "127.0.0.1:13180"},
		{"extensions::health_check::endpoint", "127.0.0.1:23133"},
		{"receivers::otlp::protocols::grpc::endpoint", "127.0.0.1:14317"},
		{"receivers::otlp::protocols::http::endpoint", "127.0.0.1:4318"},
	}
	if !slices.Equal(ls, want) {
		t.Errorf("with %q:\n%v\nwant\n%v", args[1:], ls, want)
	}
}

// freeAddr is a loopback address nothing listens on (it was free a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// health starts a server on loopback that answers as the health_check
// extension does when body says "Server available".
func health(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestASecondCollectorIsTold(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	healthAddr := health(t, `{"status":"Server available","upSince":"2026-12-07T16:00:00Z","uptime":"1m"}`)
	free := freeAddr(t)
	ls := []Listener{
		{"extensions::health_check::endpoint", healthAddr},
		{"receivers::otlp::protocols::grpc::endpoint", held.Addr().String()},
		{"receivers::otlp::protocols::http::endpoint", free},
	}
	taken := Check(ls)
	if len(taken) != 2 || taken[0].Addr != healthAddr || taken[1].Addr != held.Addr().String() {
		t.Fatalf("Check = %+v, want the health and the gRPC addresses taken", taken)
	}
	if runtime.GOOS == "linux" {
		for _, tk := range taken {
			if !strings.HasSuffix(tk.Owner, fmt.Sprintf("(pid %d)", os.Getpid())) {
				t.Errorf("%s: owner %q, want this process (pid %d)", tk.Addr, tk.Owner, os.Getpid())
			}
		}
	}
	msg := Explain("otelcol-gym", ls, taken, "extensions::health_check::endpoint")
	for _, want := range []string{
		"otelcol-gym: cannot start: " + healthAddr,
		"are in use.",
		"A collector already answers on " + healthAddr,
		"--set=receivers::otlp::protocols::grpc::endpoint=127.0.0.1:<another port>",
		"--set=extensions::health_check::endpoint=127.0.0.1:<another port>",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, free) {
		t.Errorf("the message names the free address %s:\n%s", free, msg)
	}
}

func TestSomethingElseOnThePorts(t *testing.T) {
	notCollector := health(t, "<html>Phoenix</html>")
	ls := []Listener{
		{"extensions::health_check::endpoint", freeAddr(t)},
		{"receivers::otlp::protocols::grpc::endpoint", notCollector},
		{"service::telemetry::metrics", notCollector},
	}
	taken := Check(ls)
	msg := Explain("otelcol-gym", ls, taken, "extensions::health_check::endpoint")
	if strings.Contains(msg, "already answers") {
		t.Errorf("no collector answers, yet:\n%s", msg)
	}
	if !strings.Contains(msg, "is in use") && !strings.Contains(msg, "are in use") {
		t.Errorf("message:\n%s", msg)
	}
	if !strings.Contains(msg, "--set=service::telemetry::metrics::level=none turns them off") {
		t.Errorf("the message does not say how to turn the metrics off:\n%s", msg)
	}
	if got := Explain("otelcol-gym", ls, nil, "extensions::health_check::endpoint"); got != "" {
		t.Errorf("nothing taken, yet: %q", got)
	}
}
