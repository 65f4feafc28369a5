// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import "strconv"

// Category is where a part of a rollout's time went (design §4.8).
type Category uint8

// The categories, in the order of rollouts.jsonl's time_split_ms.
const (
	// Model: model calls (the agent's call, the model server, its LLM).
	Model Category = iota
	// Tools: calls to resources servers other than /verify.
	Tools
	// Verify: the resources server's /verify (a judge's calls included).
	Verify
	// Agent: the agent's own time inside its /run, between its calls.
	Agent
	// Queue: from the rollout's first request to the agent's /run starting.
	Queue
	// Other: the rest (after the agent's /run, or no agent's /run seen).
	Other
	// Categories is the number of categories.
	Categories
)

var categoryNames = [Categories]string{"model", "tools", "verify", "agent", "queue", "other"}

// String is the category's name in rollouts.jsonl and on the metrics.
func (c Category) String() string {
	if c < Categories {
		return categoryNames[c]
	}
	return "category(" + strconv.Itoa(int(c)) + ")"
}

// Field is the key of the split in a rollouts.jsonl line.
const Field = "time_split_ms"

// CategoryAttribute names a category on the gymgenai connector's points.
const CategoryAttribute = "nemo.gym.rollout.category"

// Split is a rollout's duration in nanoseconds per category.
type Split [Categories]int64

// Total is the sum of the parts: the rollout's duration.
func (s Split) Total() int64 {
	var t int64
	for _, v := range s {
		t += v
	}
	return t
}

// Micros rounds the parts to microseconds so that they sum to the duration
// rounded to microseconds (largest remainder first, then the earlier
// category): each part is within 1µs of its exact value.
func (s Split) Micros() [Categories]int64 {
	var us, rem [Categories]int64
	var sum int64
	for i, v := range s {
		us[i], rem[i] = v/1000, v%1000
		sum += us[i]
	}
	want := (s.Total() + 500) / 1000
	for ; sum < want; sum++ {
		best := 0
		for i := range rem {
			if rem[i] > rem[best] {
				best = i
			}
		}
		us[best]++
		rem[best] = -1
	}
	return us
}

// AppendJSON appends the split as rollouts.jsonl's time_split_ms object:
// every category, in milliseconds with at most three decimals, e.g.
// {"model":1234.567,"tools":0,"verify":12.5,"agent":80.25,"queue":3.1,"other":0}.
func (s Split) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, us := range s.Micros() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, categoryNames[i]...)
		b = append(b, '"', ':')
		b = appendMillis(b, us)
	}
	return append(b, '}')
}

// appendMillis appends us microseconds (>= 0) as milliseconds, trailing
// zeros of the fraction left out.
func appendMillis(b []byte, us int64) []byte {
	b = strconv.AppendInt(b, us/1000, 10)
	frac := us % 1000
	if frac == 0 {
		return b
	}
	digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	n := 3
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}
