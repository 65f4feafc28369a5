// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFreshConnsClosesOnlyUnusedConnections: a connection that never sent
// a request is closed by closeAll; one that did (active, idle or closed
// since) is left to the server's Shutdown.
func TestFreshConnsClosesOnlyUnusedConnections(t *testing.T) {
	f := newFreshConns()
	unusedServer, unusedClient := net.Pipe()
	usedServer, usedClient := net.Pipe()
	defer usedServer.Close()
	defer usedClient.Close()
	f.track(unusedServer, http.StateNew)
	f.track(usedServer, http.StateNew)
	f.track(usedServer, http.StateActive)
	f.track(usedServer, http.StateIdle)

	// A deadline, so that a connection left open fails the test instead of
	// hanging it.
	require.NoError(t, unusedClient.SetReadDeadline(time.Now().Add(10*time.Second)))
	f.closeAll()
	_, err := unusedClient.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the unused connection is closed")
	go func() { _, _ = usedClient.Write([]byte{1}) }()
	n, err := usedServer.Read(make([]byte, 1))
	require.NoError(t, err, "the used connection stays open")
	assert.Equal(t, 1, n)
	assert.Empty(t, f.conns)
}
