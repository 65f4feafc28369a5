// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap // import "github.com/otelcol-gym/otelcol-gym/internal/servicemap"

// Folding host:port edges into services. The gym processor names the server
// of a CLIENT span by the host:port it called when the server's SERVER span
// has not been seen yet (design §4.4), so one service can show up both as
// itself and as "127.0.0.1:46085". The Map learns address → service from
// the SERVER spans it observes, per run (ports are reused across runs), and
// counts such calls on the service's edge: at Observe when the address is
// already known, and at Flush for every edge (in the file or the delta)
// whose server is a known address of its run. The learned addresses are
// written into service_map.json too, so another writer, or this one after a
// restart, folds with them.

import (
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/internal/hostport"
)

// DefaultMaxAddresses bounds the addresses a Map learns, and the addresses
// kept in service_map.json.
const DefaultMaxAddresses = 4096

// addrKey is one host:port in one run.
type addrKey struct {
	run, addr string
}

func (k addrKey) less(o addrKey) bool {
	if k.run != o.run {
		return k.run < o.run
	}
	return k.addr < o.addr
}

// addrTable maps a run's host:port to the service reached there.
type addrTable map[addrKey]string

func (a addrTable) sortedKeys() []addrKey {
	keys := make([]addrKey, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	return keys
}

// unionAddrs is mem plus the entries of disk it lacks (mem is newer and
// wins), in (run, address) order, at most max entries in all.
func unionAddrs(mem, disk addrTable, limit int) addrTable {
	out := make(addrTable, min(len(mem)+len(disk), limit))
	for k, v := range mem {
		out[k] = v
	}
	for _, k := range disk.sortedKeys() {
		if len(out) >= limit {
			break
		}
		if _, ok := out[k]; !ok {
			out[k] = disk[k]
		}
	}
	return out
}

// fold moves every edge whose server is a known address of its run onto the
// edge from the same client to that address's service (counts add,
// sketches merge exactly) and returns the calls it dropped: those of an
// edge that folding turned into a call from a service to itself. One step:
// a service named like a known address is not folded again.
func (t table) fold(addrs addrTable) (selfCalls uint64) {
	if len(addrs) == 0 {
		return 0
	}
	var moved []edgeKey
	for k := range t {
		if _, ok := addrs[addrKey{run: k.run, addr: k.server}]; ok {
			moved = append(moved, k)
		}
	}
	sort.Slice(moved, func(i, j int) bool { return moved[i].less(moved[j]) })
	from := make(map[edgeKey]*edgeStats, len(moved))
	for _, k := range moved {
		from[k] = t[k]
		delete(t, k)
	}
	for _, k := range moved {
		e := from[k]
		svc := addrs[addrKey{run: k.run, addr: k.server}]
		if svc == k.client {
			selfCalls += e.calls
			continue
		}
		nk := edgeKey{run: k.run, client: k.client, server: svc}
		if cur, ok := t[nk]; ok {
			cur.calls += e.calls
			cur.errors += e.errors
			cur.latency.Merge(e.latency)
		} else {
			t[nk] = e
		}
	}
	return selfCalls
}

// isHostPort reports whether s is "host:port" as the gym processor writes
// it into peer.service when it knows no service: a host without white
// space, ':' or '/', or a bracketed IPv6 literal, then ':' and digits.
func isHostPort(s string) bool {
	c := strings.LastIndexByte(s, ':')
	if c <= 0 || c == len(s)-1 {
		return false
	}
	for i := c + 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	host := s[:c]
	if host[0] == '[' {
		return len(host) > 2 && host[len(host)-1] == ']' && !strings.ContainsAny(host[1:len(host)-1], "[]")
	}
	return !strings.ContainsAny(host, ":/ \t\n\v\f\r")
}

// serverAddress is the host:port a SERVER span was reached at, from the
// same attributes and normalized as the gym processor does (design §4.4):
// server.address and server.port, else net.host.name and net.host.port,
// else http.host; "" when none is a host:port.
func serverAddress(attrs pcommon.Map) string {
	hp := hostport.Server(attrs)
	if !isHostPort(hp) {
		return ""
	}
	return hp
}

// learn records that address (a host:port) serves service in run. A new
// address beyond MaxAddresses is ignored (counted): its edges stay unfolded.
func (m *Map) learn(run, address, service string) {
	run, address, service = validUTF8(run), validUTF8(address), validUTF8(service)
	if service == "" || !isHostPort(address) {
		return
	}
	k := addrKey{run: run, addr: address}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.addrs[k]
	switch {
	case ok && cur == service:
		return
	case !ok && len(m.addrs) >= m.opts.MaxAddresses:
		m.stats.AddressesIgnored++
		return
	}
	m.addrs[k] = service
	m.addrsGen++
}

// runOf is the run the resource attribute runAttr names, or "".
func runOf(attrs pcommon.Map, runAttr string) string {
	if v, ok := attrs.Get(runAttr); ok {
		return v.AsString()
	}
	return ""
}
