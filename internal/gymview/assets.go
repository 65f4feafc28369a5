// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
)

// assetFS holds the pages: plain HTML, CSS and JavaScript modules, nothing
// loaded from elsewhere.
//
//go:embed assets
var assetFS embed.FS

type asset struct {
	contentType string
	body        []byte
}

// assets is every embedded file by name; a request names one of them or
// gets 404 (no path is ever built from it).
var assets = func() map[string]asset {
	m := map[string]asset{}
	entries, err := fs.ReadDir(assetFS, "assets")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := assetFS.ReadFile("assets/" + e.Name())
		if err != nil {
			panic(err)
		}
		ct := mime.TypeByExtension(path.Ext(e.Name()))
		switch path.Ext(e.Name()) {
		case ".js":
			ct = "text/javascript; charset=utf-8"
		case ".html":
			ct = "text/html; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".svg":
			ct = "image/svg+xml"
		}
		m[e.Name()] = asset{contentType: ct, body: b}
	}
	return m
}()

func serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := assets[name]
	if !ok {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	writeBody(w, r, a.contentType, a.body)
}
