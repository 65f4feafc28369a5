// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymtest // import "github.com/otelcol-gym/otelcol-gym/internal/gymtest"

import (
	"fmt"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Arrival plans: the orders and batchings a processor must give the same
// output for (the golden tests feed each).

// SpanRef names one span of a Traces by its place.
type SpanRef struct{ rs, ss, sp int }

// Refs names every span of td, in order.
func Refs(td ptrace.Traces) []SpanRef {
	var refs []SpanRef
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			for k := 0; k < sss.At(j).Spans().Len(); k++ {
				refs = append(refs, SpanRef{i, j, k})
			}
		}
	}
	return refs
}

// Batches copies the spans of td named by each group of refs into one
// Traces per group, keeping each span's resource and scope.
func Batches(td ptrace.Traces, groups [][]SpanRef) []ptrace.Traces {
	out := make([]ptrace.Traces, 0, len(groups))
	for _, g := range groups {
		b := ptrace.NewTraces()
		type key struct{ rs, ss int }
		seen := map[key]ptrace.SpanSlice{}
		for _, r := range g {
			k := key{r.rs, r.ss}
			dst, ok := seen[k]
			if !ok {
				srs := td.ResourceSpans().At(r.rs)
				sss := srs.ScopeSpans().At(r.ss)
				rs := b.ResourceSpans().AppendEmpty()
				srs.Resource().CopyTo(rs.Resource())
				ss := rs.ScopeSpans().AppendEmpty()
				sss.Scope().CopyTo(ss.Scope())
				dst = ss.Spans()
				seen[k] = dst
			}
			td.ResourceSpans().At(r.rs).ScopeSpans().At(r.ss).Spans().At(r.sp).CopyTo(dst.AppendEmpty())
		}
		out = append(out, b)
	}
	return out
}

// ArrivalPlans returns named ways to feed td: whole, one span per batch in
// order and reversed, children-last, and random permutations split randomly.
func ArrivalPlans(td ptrace.Traces, seeds int) map[string][]ptrace.Traces {
	refs := Refs(td)
	whole := ptrace.NewTraces()
	td.CopyTo(whole)
	plans := map[string][]ptrace.Traces{"whole": {whole}}
	one := func(rs []SpanRef) [][]SpanRef {
		g := make([][]SpanRef, len(rs))
		for i, r := range rs {
			g[i] = []SpanRef{r}
		}
		return g
	}
	plans["one_by_one"] = Batches(td, one(refs))
	rev := append([]SpanRef(nil), refs...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	plans["one_by_one_reversed"] = Batches(td, one(rev))
	for s := 0; s < seeds; s++ {
		rng := rand.New(rand.NewPCG(uint64(s), 42))
		perm := append([]SpanRef(nil), refs...)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		var groups [][]SpanRef
		for len(perm) > 0 {
			n := 1 + rng.IntN(len(perm))
			groups = append(groups, perm[:n])
			perm = perm[n:]
		}
		plans[fmt.Sprintf("random_%d", s)] = Batches(td, groups)
	}
	return plans
}
