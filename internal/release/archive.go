// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"io/fs"
	"sort"
	"time"
)

// archiveFile is one file of a release archive.
type archiveFile struct {
	name string
	mode fs.FileMode
	data []byte
}

// writeArchive writes files as a gzipped tar, flat (as goreleaser lays its
// archives out): entries sorted by name, each owned by 0:0 with no user or
// group name and modified at t, in the ustar format (no PAX access or change
// times), and a gzip header with neither a name nor a time.
func writeArchive(out io.Writer, files []archiveFile, t time.Time) error {
	files = append([]archiveFile(nil), files...)
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	gz, err := gzip.NewWriterLevel(out, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, f := range files {
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     f.name,
			Mode:     int64(f.mode.Perm()),
			Size:     int64(len(f.data)),
			ModTime:  t.UTC().Truncate(time.Second),
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
