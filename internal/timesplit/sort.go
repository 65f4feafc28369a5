// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

// spanBefore is the order the walk reads spans in: by parent, then by end
// (latest first), then by start and id. A total order, so that the split
// does not depend on the order the spans came in.
func spanBefore(a, b *Span) bool {
	switch {
	case a.Parent != b.Parent:
		return a.Parent < b.Parent
	case a.End != b.End:
		return a.End > b.End
	case a.Start != b.Start:
		return a.Start < b.Start
	}
	return a.ID < b.ID
}

// sortRun is how many spans sortSpans sorts by insertion before merging.
const sortRun = 32

// sortSpans sorts spans by spanBefore, using buf (returned, grown) as
// scratch: runs of sortRun spans by insertion, then merged pairwise. A
// rollout's facts are sorted once per rollout, and slices.SortFunc, its
// comparison called through a func value, costs 3 to 7 times this on 8 to
// 512 spans (bench/RESULTS.md).
func sortSpans(spans, buf []Span) []Span {
	n := len(spans)
	for lo := 0; lo < n; lo += sortRun {
		insertionSort(spans[lo:min(lo+sortRun, n)])
	}
	if n <= sortRun {
		return buf
	}
	if cap(buf) < n {
		buf = make([]Span, n)
	}
	buf = buf[:n]
	src, dst := spans, buf
	for width := sortRun; width < n; width *= 2 {
		for lo := 0; lo < n; lo += 2 * width {
			mid, hi := min(lo+width, n), min(lo+2*width, n)
			merge(dst[lo:hi], src[lo:mid], src[mid:hi])
		}
		src, dst = dst, src
	}
	if &src[0] != &spans[0] {
		copy(spans, src)
	}
	return buf
}

func insertionSort(s []Span) {
	for i := 1; i < len(s); i++ {
		x := s[i]
		j := i
		for ; j > 0 && spanBefore(&x, &s[j-1]); j-- {
			s[j] = s[j-1]
		}
		s[j] = x
	}
}

// merge merges a and b, each sorted, into dst (len(a)+len(b) long).
func merge(dst, a, b []Span) {
	i, j, k := 0, 0, 0
	for ; i < len(a) && j < len(b); k++ {
		if spanBefore(&b[j], &a[i]) {
			dst[k] = b[j]
			j++
		} else {
			dst[k] = a[i]
			i++
		}
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}
