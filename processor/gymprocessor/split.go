// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"bytes"
	"encoding/hex"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Attribute names written by the split (design §4.3).
const (
	attrLinkType      = "nemo.gym.link.type"
	attrSplitRollouts = "nemo.gym.split.rollouts"

	linkTypeJob             = "job"
	linkTypeParent          = "parent"
	linkTypePreviousAttempt = "previous_attempt"
	linkTypeRollout         = "rollout" // job span -> a rollout root cut from its trace

	rolloutTraceDomain = "otelcol-gym/rollout/v1"
)

// rolloutTraceID is T' of design §4.3: the first 16 bytes of
// SHA-256("otelcol-gym/rollout/v1" ‖ 0x00 ‖ K ‖ 0x00 ‖ R), never all zero.
func rolloutTraceID(k, rollout string) pcommon.TraceID {
	var id pcommon.TraceID
	hashID(id[:], rolloutTraceDomain, []byte(k), []byte{0}, []byte(rollout))
	return id
}

// rolloutKey returns K: the run when the span has one, else the 32 lowercase
// hex digits of its original trace id.
func rolloutKey(run string, orig pcommon.TraceID) string {
	if run != "" {
		return run
	}
	return hex.EncodeToString(orig[:])
}

type tidKey struct{ k, rollout string }

// tidCache memoizes T'; it is cleared whole when it grows past its bound.
type tidCache struct {
	m   map[tidKey]pcommon.TraceID
	max int

	// The last answer: spans of one rollout come in runs.
	last    tidKey
	lastID  pcommon.TraceID
	hasLast bool
}

func (c *tidCache) get(k, rollout string) pcommon.TraceID {
	if c.hasLast && c.last.rollout == rollout && c.last.k == k {
		return c.lastID
	}
	key := tidKey{k, rollout}
	id, ok := c.m[key]
	if !ok {
		id = c.compute(key)
	}
	c.last, c.lastID, c.hasLast = key, id, true
	return id
}

func (c *tidCache) compute(key tidKey) pcommon.TraceID {
	if len(c.m) >= c.max {
		clear(c.m)
	}
	id := rolloutTraceID(key.k, key.rollout)
	c.m[key] = id
	return id
}

// rootRef names a rollout root after the split.
type rootRef struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

func (a rootRef) less(b rootRef) bool {
	if c := bytes.Compare(a.trace[:], b.trace[:]); c != 0 {
		return c < 0
	}
	return bytes.Compare(a.span[:], b.span[:]) < 0
}

// jobEntry is what a job span learns about the roots cut from its trace.
type jobEntry struct {
	created int64
	count   int
	roots   []rootRef // the smallest max_job_links, sorted
}

// jobTable remembers, per original trace id, the rollout roots this instance
// cut from it. Bounded by split.max_tracked_jobs (oldest first out) and
// split.job_ttl.
type jobTable struct {
	t        *bounded.Table[pcommon.TraceID, *jobEntry]
	maxLinks int
	ttl      int64
}

func newJobTable(cfg SplitConfig) jobTable {
	return jobTable{t: bounded.New[pcommon.TraceID, *jobEntry](cfg.MaxTrackedJobs), maxLinks: cfg.MaxJobLinks, ttl: int64(cfg.JobTTL)}
}

// get returns what was cut from trace, or nil.
func (t *jobTable) get(trace pcommon.TraceID) *jobEntry {
	e, _ := t.t.Get(trace)
	return e
}

func (t *jobTable) add(trace pcommon.TraceID, ref rootRef, now int64) {
	e, ok := t.t.Get(trace)
	if !ok {
		e = &jobEntry{created: now}
		t.t.Put(trace, e)
	}
	e.count++
	if t.maxLinks == 0 {
		return
	}
	i := sort.Search(len(e.roots), func(i int) bool { return ref.less(e.roots[i]) })
	if len(e.roots) >= t.maxLinks && i >= len(e.roots) {
		return
	}
	e.roots = slices.Insert(e.roots, i, ref)
	if len(e.roots) > t.maxLinks {
		e.roots = e.roots[:t.maxLinks]
	}
}

// expire forgets the entries older than the TTL.
func (t *jobTable) expire(now int64) {
	for {
		k, e, ok := t.t.Oldest()
		if !ok || now-e.created < t.ttl {
			return
		}
		t.t.Delete(k)
	}
}

// rootTable remembers recent rollout roots by (K, rollout id) so that a
// retried attempt can link to the previous one; of several roots of one
// rollout (fragments) it keeps the smallest span id. Bounded by
// split.max_tracked_roots in total, oldest first out.
type rootTable struct {
	t *bounded.Table[tidKey, rootRef]
}

func newRootTable(cfg SplitConfig) rootTable {
	return rootTable{t: bounded.New[tidKey, rootRef](cfg.MaxTrackedRoots)}
}

func (t *rootTable) put(k, rollout string, ref rootRef) {
	key := tidKey{k, rollout}
	if old, ok := t.t.Get(key); ok && old.less(ref) {
		return // a rollout with several roots is known by its smallest
	}
	t.t.Put(key, ref)
}

func (t *rootTable) get(k, rollout string) (rootRef, bool) {
	return t.t.Get(tidKey{k, rollout})
}

// previousAttempt returns the id of the attempt before R = "<task>-<n>-a<k>":
// "<task>-<n>" for k = 1, "<task>-<n>-a<k-1>" for k > 1.
func previousAttempt(r string) (string, bool) {
	base, k, ok := splitAttempt(r)
	if !ok || k < 1 {
		return "", false
	}
	if k == 1 {
		return base, true
	}
	return base + "-a" + strconv.Itoa(k-1), true
}

// splitAttempt splits "<base>-a<k>" where base has the form "<task>-<n>".
func splitAttempt(r string) (string, int, bool) {
	i := strings.LastIndex(r, "-a")
	if i <= 0 || i+2 >= len(r) {
		return "", 0, false
	}
	k, err := strconv.Atoi(r[i+2:])
	if err != nil || k < 0 || strconv.Itoa(k) != r[i+2:] {
		return "", 0, false
	}
	base := r[:i]
	j := strings.LastIndexByte(base, '-')
	if j <= 0 || j+1 >= len(base) {
		return "", 0, false
	}
	if _, err := strconv.Atoi(base[j+1:]); err != nil {
		return "", 0, false
	}
	return base, k, true
}

// attemptIndex orders rollouts so earlier attempts are decided first.
func attemptIndex(r string) int {
	if _, k, ok := splitAttempt(r); ok {
		return k
	}
	return 0
}

// planJobLinks plans into ed the count of, and links to, the rollout roots
// cut from a job span's trace (design §4.3). The roots are copied: the table
// changes after the lock is released.
func (e *engine) planJobLinks(ed *spanEdit, n *node) {
	je := e.jobs.get(n.key.trace)
	if je == nil || je.count == 0 {
		return
	}
	ed.jobCount = je.count
	ed.jobLinks = slices.Clone(je.roots)
}

// hexOf returns the hex of id, memoized: every span of a job trace shares one
// original trace id. The memo is cleared whole when it grows past its bound.
func (e *engine) hexOf(id pcommon.TraceID) string {
	if h, ok := e.hexes[id]; ok {
		return h
	}
	if len(e.hexes) >= 1<<14 {
		clear(e.hexes)
	}
	h := hex.EncodeToString(id[:])
	e.hexes[id] = h
	return h
}
