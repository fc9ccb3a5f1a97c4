package filestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/basin-csi/basin/pkg/objstore"
)

// defaultMaxKeys is the page size when ListOptions.MaxKeys is 0, as in S3.
const defaultMaxKeys = 1000

// A continuation token names the last item of the previous page: "o" + an
// object key (resume after it) or "p" + a common prefix (resume after every
// key below it).
const (
	tokenObject = "o"
	tokenPrefix = "p"
)

// errPageFull stops the walk once a page is full and one more item exists.
var errPageFull = errors.New("filestore: page full")

// List implements objstore.Store by walking the tree in key order from the
// deepest directory that holds every key with the prefix.
func (s *Store) List(ctx context.Context, opts objstore.ListOptions) (objstore.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return objstore.ListPage{}, mapErr("list", opts.Prefix, err)
	}
	l := &lister{store: s, prefix: opts.Prefix, delim: opts.Delimiter, max: opts.MaxKeys}
	if l.max <= 0 {
		l.max = defaultMaxKeys
	}
	if t := opts.ContinuationToken; t != "" {
		switch {
		case strings.HasPrefix(t, tokenObject) && len(t) > len(tokenObject):
			l.after = t[len(tokenObject):]
		case strings.HasPrefix(t, tokenPrefix) && len(t) > len(tokenPrefix):
			l.skip = t[len(tokenPrefix):]
		default:
			return objstore.ListPage{}, fmt.Errorf("filestore: list %q: bad continuation token %q", opts.Prefix, t)
		}
	}
	start := opts.Prefix[:strings.LastIndex(opts.Prefix, "/")+1]
	if start != "" {
		if _, err := keyToPath(start); err != nil {
			return objstore.ListPage{}, nil // no stored key can have this prefix
		}
	}
	err := l.walkDir(ctx, start)
	if errors.Is(err, errPageFull) {
		l.page.NextToken = l.last
		err = nil
	}
	if err != nil {
		return objstore.ListPage{}, mapErr("list", opts.Prefix, err)
	}
	return l.page, nil
}

// lister builds one page.
type lister struct {
	// constant
	store  *Store
	prefix string
	delim  string
	max    int
	after  string // from an object token: skip keys <= after
	skip   string // from a prefix token: skip keys < skip and below skip

	page objstore.ListPage
	n    int    // items in page
	last string // token naming the page's last item
}

// entry is one directory entry that may hold objects.
type entry struct {
	name string
	dir  bool
	// sortKey orders entries as their keys sort: a directory's keys all
	// start with name + "/".
	sortKey string
}

// readDir returns dir's entries that can hold objects, sorted in key
// order, and whether it holds a marker file.
func (s *Store) readDir(dir string) ([]entry, bool, error) {
	f, err := s.openDir(dir)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = f.Close() }()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, false, err
	}
	marker := false
	entries := make([]entry, 0, len(des))
	for _, de := range des {
		name := de.Name()
		switch {
		case name == markerName && de.Type().IsRegular():
			marker = true
		case !validName(name):
		case de.IsDir():
			entries = append(entries, entry{name: name, dir: true, sortKey: name + "/"})
		case de.Type().IsRegular():
			entries = append(entries, entry{name: name, sortKey: name})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.sortKey, b.sortKey) })
	return entries, marker, nil
}

// walkDir visits, in key order, the keys below the directory whose keys
// start with dk ("" for the root).
func (l *lister) walkDir(ctx context.Context, dk string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, marker, err := l.store.readDir(dirPath(dk))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // removed meanwhile, or a file where a directory was expected
	}
	if err != nil {
		return err
	}
	if marker && dk != "" {
		if err := l.visitObject(dk, dk+markerName); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if e.dir {
			err = l.visitDir(ctx, dk+e.sortKey)
		} else {
			err = l.visitObject(dk+e.name, dk+e.name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// skipped reports whether the continuation token puts key on an earlier page.
func (l *lister) skipped(key string) bool {
	if l.skip != "" {
		return key < l.skip || strings.HasPrefix(key, l.skip)
	}
	return key <= l.after
}

// visitObject visits key, stored at rel.
func (l *lister) visitObject(key, rel string) error {
	if !strings.HasPrefix(key, l.prefix) || l.skipped(key) {
		return nil
	}
	if l.delim != "" {
		if i := strings.Index(key[len(l.prefix):], l.delim); i >= 0 {
			return l.emitPrefix(key[:len(l.prefix)+i+len(l.delim)])
		}
	}
	fi, err := l.store.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.Mode().IsRegular() {
		return nil // deleted or replaced meanwhile
	}
	if err != nil {
		return err
	}
	return l.emit(tokenObject+key, func() { l.page.Objects = append(l.page.Objects, objectInfo(key, fi)) })
}

// visitDir visits the subtree whose keys all start with sub (ending in '/').
func (l *lister) visitDir(ctx context.Context, sub string) error {
	if !strings.HasPrefix(sub, l.prefix) && !strings.HasPrefix(l.prefix, sub) {
		return nil
	}
	// Is every key below sub on an earlier page?
	if l.skip != "" && (strings.HasPrefix(sub, l.skip) || sub < l.skip && !strings.HasPrefix(l.skip, sub)) {
		return nil
	}
	if l.skip == "" && sub < l.after && !strings.HasPrefix(l.after, sub) {
		return nil
	}
	// With delimiter "/", a subdirectory below the prefix is one common
	// prefix (the walk starts at the prefix's directory): emit it without
	// descending, if it holds any object. Other delimiters roll keys up one
	// by one in visitObject.
	if l.delim == "/" && strings.HasPrefix(sub, l.prefix) {
		rest := sub[len(l.prefix):]
		cp := sub[:len(l.prefix)+strings.Index(rest, "/")+1]
		if l.last == tokenPrefix+cp {
			return nil
		}
		has, err := l.store.hasObject(ctx, dirPath(sub))
		if err != nil || !has {
			return err
		}
		return l.emitPrefix(cp)
	}
	return l.walkDir(ctx, sub)
}

func (l *lister) emitPrefix(cp string) error {
	if l.last == tokenPrefix+cp {
		return nil // keys below one prefix come one after the other
	}
	return l.emit(tokenPrefix+cp, func() { l.page.CommonPrefixes = append(l.page.CommonPrefixes, cp) })
}

// emit adds one item to the page, or stops the walk if the page is full.
func (l *lister) emit(token string, add func()) error {
	if l.n == l.max {
		return errPageFull
	}
	add()
	l.n++
	l.last = token
	return nil
}

// hasObject reports whether any object lies below dir.
func (s *Store) hasObject(ctx context.Context, dir string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	f, err := s.openDir(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }()
	var subdirs []string
	for {
		des, err := f.ReadDir(256)
		for _, de := range des {
			name := de.Name()
			switch {
			case name == markerName && de.Type().IsRegular():
				return true, nil
			case !validName(name):
			case de.Type().IsRegular():
				return true, nil
			case de.IsDir():
				subdirs = append(subdirs, filepath.Join(dir, name))
			}
		}
		if err == io.EOF || len(des) == 0 {
			break
		}
		if err != nil {
			return false, err
		}
	}
	for _, sub := range subdirs {
		if has, err := s.hasObject(ctx, sub); has || err != nil {
			return has, err
		}
	}
	return false, nil
}
