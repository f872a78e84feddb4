package pages

import (
	"errors"
	"io/fs"
	"path"
	"strings"
)

// Folder is a results folder found under a root.
type Folder struct {
	// Path is its path from the root, slash-separated ("." the root).
	Path string
	// Kind is what it is, from the file that marks it: "run"
	// (summary.json), "sweep" (sweep.json), "search" (search.json),
	// "search shard" (search-shard.json), "compare" (compare.json) or
	// "validation" (validation.json).
	Kind string
	// Page says it holds an index.html.
	Page bool
}

// markers are the files that mark a results folder's kind, in the order
// they are looked for.
var markers = []struct{ file, kind string }{
	{"sweep.json", "sweep"},
	{"search.json", "search"},
	{"search-shard.json", "search shard"},
	{"compare.json", "compare"},
	{"validation.json", "validation"},
	{"summary.json", "run"},
}

// Scan bounds: how deep and how many folders a scan visits.
const (
	MaxScanDepth   = 6
	MaxScanFolders = 20000
)

// errScanFull stops a scan at MaxScanFolders.
var errScanFull = errors.New("pages: too many folders")

// Scan finds the results folders under fsys's root, in path order: a
// folder holding one of the kinds' marker files. It does not look inside a
// results folder (a sweep's points/, a search's evals/), into a folder
// whose name starts with "." or past MaxScanDepth, and it follows no
// symbolic link (fs.WalkDir does not). It stops after MaxScanFolders
// folders; truncated says so.
func Scan(fsys fs.FS) (folders []Folder, truncated bool, err error) {
	visited := 0
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return fs.SkipDir // an unreadable folder is left out
		}
		if !d.IsDir() {
			return nil
		}
		if p != "." && (strings.HasPrefix(d.Name(), ".") || strings.Count(p, "/") >= MaxScanDepth) {
			return fs.SkipDir
		}
		if visited++; visited > MaxScanFolders {
			return errScanFull
		}
		if kind := Kind(fsys, p); kind != "" {
			folders = append(folders, Folder{Path: p, Kind: kind, Page: isFile(fsys, path.Join(p, File))})
			return fs.SkipDir
		}
		return nil
	})
	if errors.Is(err, errScanFull) {
		return folders, true, nil
	}
	return folders, false, err
}

// Kind is what the folder dir of fsys is, from the file that marks it
// (Folder.Kind), or "" when it is no results folder.
func Kind(fsys fs.FS, dir string) string {
	for _, m := range markers {
		if isFile(fsys, path.Join(dir, m.file)) {
			return m.kind
		}
	}
	return ""
}

// IsPage reports whether dir of fsys holds a page (File).
func IsPage(fsys fs.FS, dir string) bool { return isFile(fsys, path.Join(dir, File)) }

// isFile reports whether name is a regular file of fsys.
func isFile(fsys fs.FS, name string) bool {
	fi, err := fs.Stat(fsys, name)
	return err == nil && fi.Mode().IsRegular()
}

// IndexDoc is the page that lists the results folders under a root (its
// title title): each folder linked to its index.html (to the folder
// when it has none) with its kind, then extra links (REPORT.md).
func IndexDoc(title string, folders []Folder, truncated bool, extra []Link) *Doc {
	d := &Doc{Title: title, Kind: "index"}
	sec := Section{ID: "folders", Title: "Results folders"}
	if len(folders) == 0 {
		sec.Text = append(sec.Text, "No results folder here: dcpsim run, sweep, search, compare --out and validate --out write them.")
	}
	for _, f := range folders {
		href := f.Path + "/"
		if f.Page {
			href += File
		}
		if f.Path == "." {
			href = "./"
		}
		note := f.Kind
		if !f.Page {
			note += " (no index.html: written by an older dcpsim, or with the page left out)"
		}
		sec.Links = append(sec.Links, Link{Text: f.Path, Href: href, Note: note})
	}
	if truncated {
		sec.Notes = append(sec.Notes, "The scan stopped after its bound of folders: some folders are not listed.")
	}
	d.Sections = append(d.Sections, sec)
	if len(extra) > 0 {
		d.Sections = append(d.Sections, Section{ID: "more", Title: "More", Links: extra})
	}
	return d
}
