// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"net"
	"net/http"
	"sync"
)

// freshConns follows a server's connections that have not sent a request
// yet. An HTTP client with many requests in flight dials ahead of them and
// may never use a connection it dialed; http.Server.Shutdown treats such a
// connection as idle only once it is 5 s old, so every server that had one
// took 5 s to stop at the end of a run (at --concurrency 64 nearly every
// run). Once the run is over no request is coming: closeAll closes them,
// and Shutdown then waits only for the requests still being answered.
type freshConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newFreshConns() *freshConns { return &freshConns{conns: map[net.Conn]struct{}{}} }

// track is the server's ConnState hook.
func (f *freshConns) track(c net.Conn, s http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s == http.StateNew {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
}

// closeAll closes the connections that never sent a request.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		_ = c.Close()
		delete(f.conns, c)
	}
}
