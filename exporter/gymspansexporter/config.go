// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"github.com/otelcol-gym/otelcol-gym/internal/credentials"

	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Values of rollout_roots: which spans get a rollouts.jsonl line.
const (
	rootsAuto       = "auto"
	rootsMarked     = "marked"
	rootsParentless = "parentless"
)

// Values of combined_spans: which spans the combined file holds.
const (
	combinedAll  = "all"
	combinedRest = "rest"
)

// Output formats of the span files (design §5.2).
const (
	formatConsole  = "console"
	formatOTLPJSON = "otlp_json"
)

// Config is the configuration of the gymspans exporter (design §5).
type Config struct {
	// CaptureDir is the directory Gym writes <rollout_id>.capture.jsonl into
	// (Gym's model_call_capture_dir). Required. Created with
	// DirectoryPermissions when missing.
	CaptureDir string `mapstructure:"capture_dir"`

	// PathTemplate names a rollout's span file inside CaptureDir. It must hold
	// {rollout_id} and may hold {run_id}. Default: "{rollout_id}.spans.jsonl".
	PathTemplate string `mapstructure:"path_template"`

	// CombinedFile receives every span, with or without a rollout. Empty turns
	// it off. Default: "spans.jsonl".
	CombinedFile string `mapstructure:"combined_file"`

	// CombinedSpans chooses the spans of the combined file: "all" (every
	// span; the combined file is the journal) or "rest" (only the spans that
	// are in no rollout file, so each span is written once in human form;
	// the journal is a compact one of the exporter's own, internal/journal).
	CombinedSpans string `mapstructure:"combined_spans"`

	// Rotation bounds the combined file.
	Rotation RotationConfig `mapstructure:"rotation"`

	// RolloutsFile receives one line per rollout root written. Empty turns it
	// off. Default: "rollouts.jsonl".
	RolloutsFile string `mapstructure:"rollouts_file"`

	// RolloutRoots chooses the spans that get a rollouts.jsonl line: "marked"
	// (the span the gym processor marked nemo.gym.rollout.root, one per
	// rollout), "parentless" (a span with a rollout id and no parent: the
	// rule without the gym processor), or "auto" (marked when a gym
	// processor was created in this collector, else parentless).
	// Default: "auto".
	RolloutRoots string `mapstructure:"rollout_roots"`

	// RolloutAttribute names a span's rollout: a span attribute, or a resource
	// attribute after the gym processor's promote_to_resource. The gym
	// processor's key of the same name; give both the same value.
	// Default: "nemo.gym.rollout.id".
	RolloutAttribute string `mapstructure:"rollout_attribute"`

	// RunAttribute is the resource attribute that names a span's run
	// ({run_id}, run_id in rollouts.jsonl, the service map's runs); a span
	// whose resource lacks it is read for nemo.gym.run.id (newer Gym). The
	// gym processor's key of the same name. Default: "nemo.run.id".
	RunAttribute string `mapstructure:"run_attribute"`

	// ServiceAttributes are the resource attributes that name a span's
	// service, first present wins: service_name in rollouts.jsonl and the
	// service map's services. The gym processor's key of the same name.
	// Default: [service.name.override, service.name].
	ServiceAttributes []string `mapstructure:"service_attributes"`

	// Format is "console" (Gym's console JSON plus flat fields, one span per
	// line) or "otlp_json" (one ExportTraceServiceRequest per line). Default: "console".
	Format string `mapstructure:"format"`

	// MaxOpenFiles bounds the descriptors held inside CaptureDir (the
	// directory's own descriptor included); the least recently used idle
	// file is closed first. At least 2. Default: 256.
	MaxOpenFiles int `mapstructure:"max_open_files"`

	// FlushInterval is the longest time between fsyncs of written files
	// (lines are in the kernel when an export returns; fsync is for power
	// loss). Default: 1s.
	FlushInterval time.Duration `mapstructure:"flush_interval"`

	// MaxPendingBytes bounds the rollout-file and rollouts.jsonl lines held
	// in memory between the combined file and their own files (with the
	// combined file on): at the bound they are written early, and pushes
	// wait while the flusher cannot bring them below it. Default: 64 MiB.
	MaxPendingBytes int `mapstructure:"max_pending_bytes"`

	// DedupWindowSpans is how many of the spans written last are
	// remembered to drop a span written twice (a sender's retry after a
	// crash; design §4.6); 0 turns deduplication off. Default: 524288.
	DedupWindowSpans int `mapstructure:"dedup_window_spans"`

	// LockHold is the longest time a file's exclusive lock is kept after an
	// append, so that back-to-back batches to the same file take it once.
	// Another process sharing the capture dir waits at most about this long
	// for a lock we keep; 0 gives every lock back after its batch.
	// Default: 10ms.
	LockHold time.Duration `mapstructure:"lock_hold"`

	// SharedCaptureDir says whether other processes may append to the
	// files of the capture dir at the same time (several collectors on one
	// dir, often over NFS). Shared, every append takes the file's flock and
	// reads its state (design §5.1); alone, appends take no lock and, once a
	// file's size is known, no fstat. Unset: shared when the capture dir is
	// on a network or cluster filesystem (NFS, SMB/CIFS, FUSE, 9p, Ceph, AFS,
	// OCFS2, GFS2, Coda, Lustre, GPFS, IBRIX, PanFS), alone otherwise. Set it to true when collectors share a
	// capture dir on a local disk.
	SharedCaptureDir *bool `mapstructure:"shared_capture_dir"`

	// FilePermissions are the octal permissions of created files. Default: "0640".
	FilePermissions string `mapstructure:"file_permissions"`

	// DirectoryPermissions are the octal permissions of a created capture dir.
	// Default: "0750".
	DirectoryPermissions string `mapstructure:"directory_permissions"`

	// ServiceMap configures service_map.json and service_map.md.
	ServiceMap ServiceMapConfig `mapstructure:"service_map"`

	// TimeSplit configures time_split_ms in rollouts.jsonl (design §4.8).
	TimeSplit TimeSplitConfig `mapstructure:"time_split"`

	// Credentials is the rule for attributes that carry credentials
	// (design §6): a batch that holds one is copied, and the copy written
	// without them (resources, spans, span events, links); the gym
	// processor before it removes them already, this is for pipelines
	// without it. Default: the rule's default keys and suffixes; `keys: []`
	// and `suffixes: []` turn it off.
	Credentials credentials.Config `mapstructure:"credentials"`

	// TimeoutConfig bounds one export call. Default: 5s.
	TimeoutConfig exporterhelper.TimeoutConfig `mapstructure:",squash"`

	// QueueConfig is off by default: every batch is written before the call
	// returns. It may only be turned on with a storage extension (file_storage).
	QueueConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`

	// RetryConfig retries failed writes. Default: off (the error goes back to
	// the caller, which holds only the unwritten spans).
	RetryConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// RotationConfig bounds the combined file by size.
type RotationConfig struct {
	// MaxMegabytes is the size the combined file is kept under: it is rotated
	// before a batch would take it past this size. Default: 100.
	MaxMegabytes int `mapstructure:"max_megabytes"`
	// MaxBackups is the number of rotated files kept, oldest removed first;
	// 0 keeps none. Default: 10.
	MaxBackups int `mapstructure:"max_backups"`
}

// ServiceMapConfig configures the service-map files (design §5.1).
type ServiceMapConfig struct {
	// Enabled writes service_map.json and service_map.md. Default: true.
	Enabled bool `mapstructure:"enabled"`
	// JSONFile is the file name of the edge table. Default: "service_map.json".
	JSONFile string `mapstructure:"json_file"`
	// MarkdownFile is the file name of the Mermaid drawing. Default: "service_map.md".
	MarkdownFile string `mapstructure:"markdown_file"`
}

// TimeSplitConfig configures where a rollout's time went (design §4.8):
// time_split_ms in its rollouts.jsonl line.
type TimeSplitConfig struct {
	// Enabled writes time_split_ms. Default: true.
	Enabled bool `mapstructure:"enabled"`
	// MaxSpans bounds the spans of rollouts in flight whose facts (40 bytes
	// each) are held until their roots arrive; past it the rollouts least
	// recently added to are let go and get no time_split_ms. Default: 1048576.
	MaxSpans int `mapstructure:"max_spans"`
}

var _ confmap.Validator = (*Config)(nil)

// Validate checks the configuration; every error names its key. It looks at
// no file (`otelcol-gym validate` may run on another machine than the
// collector): Start checks capture_dir.
func (cfg *Config) Validate() error {
	var errs []error
	if strings.TrimSpace(cfg.CaptureDir) == "" {
		errs = append(errs, errors.New("capture_dir: must not be empty (set it to Gym's model_call_capture_dir)"))
	}
	switch cfg.RolloutRoots {
	case rootsAuto, rootsMarked, rootsParentless:
	default:
		errs = append(errs, fmt.Errorf("rollout_roots: %q is not one of %q, %q, %q", cfg.RolloutRoots, rootsAuto, rootsMarked, rootsParentless))
	}
	if strings.TrimSpace(cfg.RolloutAttribute) == "" {
		errs = append(errs, errors.New("rollout_attribute: must not be empty"))
	}
	if strings.TrimSpace(cfg.RunAttribute) == "" {
		errs = append(errs, errors.New("run_attribute: must not be empty"))
	}
	if len(cfg.ServiceAttributes) == 0 || slices.ContainsFunc(cfg.ServiceAttributes, func(a string) bool { return strings.TrimSpace(a) == "" }) {
		errs = append(errs, fmt.Errorf("service_attributes: %q must name at least one resource attribute, and no empty one", cfg.ServiceAttributes))
	}
	if err := validateTemplate(cfg.PathTemplate); err != nil {
		errs = append(errs, fmt.Errorf("path_template: %w", err))
	}
	for key, name := range map[string]string{
		"combined_file":             cfg.CombinedFile,
		"rollouts_file":             cfg.RolloutsFile,
		"service_map.json_file":     cfg.ServiceMap.JSONFile,
		"service_map.markdown_file": cfg.ServiceMap.MarkdownFile,
	} {
		if name != "" && !isPlainFileName(name) {
			errs = append(errs, fmt.Errorf("%s: %q must be a plain file name inside capture_dir", key, name))
		}
	}
	if cfg.CombinedSpans != combinedAll && cfg.CombinedSpans != combinedRest {
		errs = append(errs, fmt.Errorf("combined_spans: %q is not one of %q, %q", cfg.CombinedSpans, combinedAll, combinedRest))
	}
	if cfg.CombinedFile != "" && cfg.CombinedFile == cfg.RolloutsFile {
		errs = append(errs, fmt.Errorf("rollouts_file: %q is also the combined_file", cfg.RolloutsFile))
	}
	if cfg.ServiceMap.Enabled && (cfg.ServiceMap.JSONFile == "" || cfg.ServiceMap.MarkdownFile == "") {
		errs = append(errs, errors.New("service_map: json_file and markdown_file must be set when enabled"))
	}
	switch cfg.Format {
	case formatConsole, formatOTLPJSON:
	default:
		errs = append(errs, fmt.Errorf("format: %q is not one of %q, %q", cfg.Format, formatConsole, formatOTLPJSON))
	}
	if cfg.TimeSplit.Enabled && cfg.TimeSplit.MaxSpans < 1 {
		errs = append(errs, fmt.Errorf("time_split.max_spans: must be at least 1, got %d", cfg.TimeSplit.MaxSpans))
	}
	if cfg.MaxOpenFiles < 2 {
		errs = append(errs, fmt.Errorf("max_open_files: must be at least 2, got %d", cfg.MaxOpenFiles))
	}
	if cfg.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("flush_interval: must be a positive duration, got %v", cfg.FlushInterval))
	}
	if cfg.MaxPendingBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("max_pending_bytes: must be at least 1 MiB, got %d", cfg.MaxPendingBytes))
	}
	if cfg.DedupWindowSpans < 0 || cfg.DedupWindowSpans > 1<<26 {
		errs = append(errs, fmt.Errorf("dedup_window_spans: must be between 0 and %d, got %d", 1<<26, cfg.DedupWindowSpans))
	}
	if n := cfg.journalDescriptors(); cfg.CombinedFile != "" && cfg.MaxOpenFiles < 2+n {
		errs = append(errs, fmt.Errorf("max_open_files: must be at least %d with the combined file (its journal index holds %d), got %d", 2+n, n, cfg.MaxOpenFiles))
	}
	if cfg.LockHold < 0 || cfg.LockHold > time.Second {
		errs = append(errs, fmt.Errorf("lock_hold: must be between 0 and 1s, got %v", cfg.LockHold))
	}
	if cfg.Rotation.MaxMegabytes <= 0 {
		errs = append(errs, fmt.Errorf("rotation.max_megabytes: must be positive, got %d", cfg.Rotation.MaxMegabytes))
	}
	if cfg.Rotation.MaxBackups < 0 {
		errs = append(errs, fmt.Errorf("rotation.max_backups: must not be negative, got %d", cfg.Rotation.MaxBackups))
	}
	if _, err := parsePerm(cfg.FilePermissions); err != nil {
		errs = append(errs, fmt.Errorf("file_permissions: %w", err))
	}
	if _, err := parsePerm(cfg.DirectoryPermissions); err != nil {
		errs = append(errs, fmt.Errorf("directory_permissions: %w", err))
	}
	if cfg.TimeoutConfig.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: must not be negative, got %v", cfg.TimeoutConfig.Timeout))
	}
	if cfg.QueueConfig.HasValue() && cfg.QueueConfig.Get().StorageID == nil {
		errs = append(errs, errors.New("sending_queue: only offered with a storage extension (set sending_queue.storage to a file_storage id); without one every batch is written before the export returns"))
	}
	return errors.Join(errs...)
}

// restOnly says whether the combined file holds only the spans that are in
// no rollout file (combined_spans: rest, with the combined file on).
func (cfg *Config) restOnly() bool {
	return cfg.CombinedFile != "" && cfg.CombinedSpans == combinedRest
}

// journalDescriptors are the descriptors the journal index holds inside
// the capture dir: its directory, its lock and its current segment, and
// with combined_spans rest the current segment's span data.
func (cfg *Config) journalDescriptors() int {
	if cfg.restOnly() {
		return 4
	}
	return 3
}

// validateTemplate accepts a file-name template with {rollout_id} and
// optionally {run_id}, and no path separator.
func validateTemplate(t string) error {
	if !strings.Contains(t, "{rollout_id}") {
		return fmt.Errorf("%q must contain {rollout_id}", t)
	}
	rest := strings.NewReplacer("{rollout_id}", "x", "{run_id}", "x").Replace(t)
	if strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("%q: only {rollout_id} and {run_id} may be used", t)
	}
	if !isPlainFileName(rest) {
		return fmt.Errorf("%q must name a file directly inside capture_dir", t)
	}
	return nil
}

func isPlainFileName(name string) bool {
	return name != "." && name != ".." && !strings.ContainsAny(name, "/\\\x00") && filepath.Base(name) == name
}

func parsePerm(s string) (os.FileMode, error) {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		return 0, fmt.Errorf("%q is not an octal permission such as \"0640\"", s)
	}
	return os.FileMode(v), nil
}
