// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-gym/otelcol-gym/internal/credentials"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/evidence"
)

// Config is the configuration of the gym processor (design §4).
type Config struct {
	// RolloutAttribute is the span attribute that names a span's rollout.
	// Default: "nemo.gym.rollout.id".
	RolloutAttribute string `mapstructure:"rollout_attribute"`

	// URLAttributes are the span attributes searched, first present wins, for a
	// "/ng-rollout/<id>/" path segment. Default: [url.path, http.target, url.full, http.url].
	URLAttributes []string `mapstructure:"url_attributes"`

	// URLPrefix is the path segment that introduces a rollout id in a URL.
	// Default: "ng-rollout".
	URLPrefix string `mapstructure:"url_prefix"`

	// RolloutIDPattern is the regular expression a rollout id taken from a URL
	// must match as a whole. Default: "[A-Za-z0-9][A-Za-z0-9._-]*".
	RolloutIDPattern string `mapstructure:"rollout_id_pattern"`

	// ServiceAttributes are the resource attributes that name a span's service,
	// first present wins. Default: [service.name.override, service.name].
	ServiceAttributes []string `mapstructure:"service_attributes"`

	// RunAttribute is the resource attribute that names a span's run.
	// Default: "nemo.run.id".
	RunAttribute string `mapstructure:"run_attribute"`

	// ModelRoutes are the URL paths of a model server's calls. A SERVER POST
	// on one without the /<url_prefix>/ prefix, before any rollout evidence
	// in its run, shows that Gym's observability is off: the run then passes
	// through without waiting (design §4.2). Empty: only a gym.rollout span
	// without a rollout id shows it. Default: [/v1/responses,
	// /v1/chat/completions, /v1/completions].
	ModelRoutes []string `mapstructure:"model_routes"`

	// JobSpanNames are the names of spans that wrap a whole run; they never
	// become part of a rollout, and a rollout root whose parent is one is cut
	// with link type "job". With split on, a job span is held settle, then
	// until nothing else of its trace is pending (at most wait), so that it
	// can link the roots cut from its trace. Default: [gym.job].
	JobSpanNames []string `mapstructure:"job_span_names"`

	// Settle is how long after it arrived an upward decision is taken.
	// It should be at least the senders' batch delay. Default: 5s.
	Settle time.Duration `mapstructure:"settle"`

	// Wait is the longest an undecided root waits for spans below it, a
	// rollout root for its parent, and a re-dispatched attempt's root for its
	// previous attempt's root. Default: 30s.
	Wait time.Duration `mapstructure:"wait"`

	// RolloutWait is the longest an undecided span waits for its parent to
	// arrive and decide (a parent still open, such as POST /run while its
	// rollout runs), and a parentless SERVER span with evidence for its
	// rollout's gym.rollout. Default: 2h.
	RolloutWait time.Duration `mapstructure:"rollout_wait"`

	// PromoteToResource regroups the output so that each ResourceSpans holds one
	// rollout and carries the rollout attribute on its resource. Default: false.
	PromoteToResource bool `mapstructure:"promote_to_resource"`

	// MaxPendingSpans bounds the spans held undecided. At the bound the spans
	// nearest their deadline are emitted as they stand (their pending
	// decisions taken with what is known), never dropped. It also bounds,
	// separately, the index entries kept for spans that already left (ids and
	// rollout, about 200 bytes each, expiring after wait) so that late
	// children are still resolved downward. Default: 1,000,000.
	MaxPendingSpans int `mapstructure:"max_pending_spans"`

	// MaxPendingBytes bounds the estimated size of the spans held undecided
	// (span data plus the processor's bookkeeping). Default: 512 MiB.
	MaxPendingBytes int64 `mapstructure:"max_pending_bytes"`

	// Split configures one trace per rollout (design §4.3).
	Split SplitConfig `mapstructure:"split"`

	// ServiceMap configures the service-map repairs (design §4.4).
	ServiceMap ServiceMapConfig `mapstructure:"service_map"`

	// Storage names a storage extension (contrib file_storage) in which the
	// processor records every batch before ConsumeTraces returns, so that a
	// kill -9 loses no span it acknowledged: on start it replays what was
	// recorded, deadlines included (design §4.6). Without it, a kill -9 loses
	// the spans held undecided. Default: none.
	Storage *component.ID `mapstructure:"storage"`

	// Credentials is the rule for attributes that carry credentials
	// (design §6): they are removed from every arriving batch's resources,
	// spans, span events and links before the journal records it, so
	// nothing after the processor writes or forwards them. Default: the
	// rule's default keys and suffixes; `keys: []` and `suffixes: []` turn
	// it off. It is not part of the journal's fingerprint: the rule is
	// applied again to every record a start replays, so changing it never
	// sets a journal aside.
	Credentials credentials.Config `mapstructure:"credentials" json:"-"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// SplitConfig configures the per-rollout trace split (design §4.3).
type SplitConfig struct {
	// Enabled gives every rollout its own trace id. Default: true.
	Enabled bool `mapstructure:"enabled"`

	// MaxJobLinks bounds the links a job span gets to the rollout roots cut from
	// its trace (those with the smallest trace ids). Default: 128.
	MaxJobLinks int `mapstructure:"max_job_links"`

	// MaxTrackedJobs bounds the table of job traces whose cut roots are
	// remembered for the job span. Default: 1024.
	MaxTrackedJobs int `mapstructure:"max_tracked_jobs"`

	// JobTTL is how long an entry of that table is kept. Default: 24h.
	JobTTL time.Duration `mapstructure:"job_ttl"`

	// MaxTrackedRoots bounds the recent rollout roots remembered, keyed by
	// (run, rollout id), so a retried attempt can link to the previous one.
	// The bound is over all runs together; the oldest leave first.
	// Default: 100,000.
	MaxTrackedRoots int `mapstructure:"max_tracked_roots"`
}

// ServiceMapConfig configures the service-map repairs (design §4.4).
type ServiceMapConfig struct {
	// Enabled sets peer.service on CLIENT spans. Default: true.
	Enabled bool `mapstructure:"enabled"`

	// SynthesizeClientSpans adds a CLIENT parent to a SERVER span that has
	// none in its caller's service: a parentless SERVER span with direct
	// evidence (below its rollout's gym.rollout; needs split.enabled), and a
	// SERVER span below an INTERNAL span of another service. Default: true.
	SynthesizeClientSpans bool `mapstructure:"synthesize_client_spans"`

	// Peers seeds the host:port → service map used for peer.service when a
	// CLIENT span's SERVER child has not been seen, e.g. {"127.0.0.1:8000":
	// "vllm"}; it wins over what SERVER spans teach. Keys are matched
	// case-insensitively.
	Peers map[string]string `mapstructure:"peers"`
}

var _ confmap.Validator = (*Config)(nil)

// Validate checks the configuration; every error names its key.
func (cfg *Config) Validate() error {
	var errs []error
	if strings.TrimSpace(cfg.RolloutAttribute) == "" {
		errs = append(errs, errors.New("rollout_attribute: must not be empty"))
	}
	if strings.TrimSpace(cfg.URLPrefix) == "" || strings.Contains(cfg.URLPrefix, "/") {
		errs = append(errs, fmt.Errorf("url_prefix: %q must be one non-empty path segment", cfg.URLPrefix))
	}
	if _, err := evidence.CompilePattern(cfg.RolloutIDPattern); err != nil {
		errs = append(errs, fmt.Errorf("rollout_id_pattern: %w", err))
	}
	if len(cfg.ServiceAttributes) == 0 {
		errs = append(errs, errors.New("service_attributes: must name at least one resource attribute"))
	}
	for name, d := range map[string]time.Duration{
		"settle":        cfg.Settle,
		"wait":          cfg.Wait,
		"rollout_wait":  cfg.RolloutWait,
		"split.job_ttl": cfg.Split.JobTTL,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be a positive duration, got %v", name, d))
		}
	}
	if cfg.Settle > 0 && cfg.Wait > 0 && cfg.Settle > cfg.Wait {
		errs = append(errs, fmt.Errorf("settle: %v must not exceed wait (%v)", cfg.Settle, cfg.Wait))
	}
	if cfg.Wait > 0 && cfg.RolloutWait > 0 && cfg.RolloutWait < cfg.Wait {
		errs = append(errs, fmt.Errorf("rollout_wait: %v must not be shorter than wait (%v)", cfg.RolloutWait, cfg.Wait))
	}
	if cfg.MaxPendingSpans <= 0 {
		errs = append(errs, fmt.Errorf("max_pending_spans: must be positive, got %d", cfg.MaxPendingSpans))
	}
	if cfg.MaxPendingBytes <= 0 {
		errs = append(errs, fmt.Errorf("max_pending_bytes: must be positive, got %d", cfg.MaxPendingBytes))
	}
	if cfg.Split.MaxJobLinks < 0 {
		errs = append(errs, fmt.Errorf("split.max_job_links: must not be negative, got %d", cfg.Split.MaxJobLinks))
	}
	if cfg.Split.MaxTrackedJobs <= 0 {
		errs = append(errs, fmt.Errorf("split.max_tracked_jobs: must be positive, got %d", cfg.Split.MaxTrackedJobs))
	}
	if cfg.Split.MaxTrackedRoots <= 0 {
		errs = append(errs, fmt.Errorf("split.max_tracked_roots: must be positive, got %d", cfg.Split.MaxTrackedRoots))
	}
	for _, r := range cfg.ModelRoutes {
		if !strings.HasPrefix(r, "/") {
			errs = append(errs, fmt.Errorf("model_routes: %q must be a URL path starting with /", r))
		}
	}
	for hostport, svc := range cfg.ServiceMap.Peers {
		if !strings.Contains(hostport, ":") || svc == "" {
			errs = append(errs, fmt.Errorf("service_map.peers: entry %q: %q must map host:port to a service name", hostport, svc))
		}
	}
	return errors.Join(errs...)
}
