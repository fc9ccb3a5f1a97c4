package gcsstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/basin-csi/basin/pkg/objstore"
)

// defaultMaxKeys is the page size when ListOptions.MaxKeys is 0.
const defaultMaxKeys = 1000

// maxServerPage is the most entries GCS returns in one response.
const maxServerPage = 1000

// listAttrs are the only fields List asks GCS for. Metadata comes in the
// same answer (a listing tells modes and symbolic links without a request
// per object, as gcsfuse relies on).
var listAttrs = []string{"Name", "Size", "Generation", "Updated", "Metadata"}

// List returns one page of at most MaxKeys objects and common prefixes
// together, in lexicographic order.
//
// Pages are cut by this adapter, not by GCS's page tokens: NextToken
// encodes the last entry returned, and the next page asks GCS for entries
// from there on (startOffset, inclusive) and drops what is not after it. A
// prefix P as last entry makes GCS fold everything below P into P again,
// which is dropped, so a page never repeats an entry. This also holds
// against fake-gcs-server, which applies maxResults to objects only and
// repeats every common prefix at or after the page token on every page.
// One request per page (GCS returns at most 1000 entries, so a MaxKeys
// above that yields shorter pages).
func (s *Store) List(ctx context.Context, opts objstore.ListOptions) (objstore.ListPage, error) {
	pageSize := opts.MaxKeys
	if pageSize <= 0 {
		pageSize = defaultMaxKeys
	}
	after, err := decodeToken(opts.ContinuationToken)
	if err != nil {
		return objstore.ListPage{}, err
	}
	q := &storage.Query{Prefix: opts.Prefix, Delimiter: opts.Delimiter, StartOffset: after}
	if err := q.SetAttrSelection(listAttrs); err != nil {
		return objstore.ListPage{}, mapErr(opList, opts.Prefix, err)
	}
	ctx, cancel := s.requestCtx(ctx)
	defer cancel()

	// One more than a page, so that dropping the entry equal to after
	// still leaves a full page.
	fetch := min(pageSize+1, maxServerPage)
	var attrs []*storage.ObjectAttrs
	serverNext, err := iterator.NewPager(s.bucket.Objects(ctx, q), fetch, "").NextPage(&attrs)
	if err != nil {
		return objstore.ListPage{}, mapErr(opList, opts.Prefix, err)
	}
	entries := sortEntries(attrs, after, opts.ContinuationToken != "")
	more := serverNext != "" || len(entries) > pageSize
	if len(entries) > pageSize {
		entries = entries[:pageSize]
	}
	var page objstore.ListPage
	for _, e := range entries {
		if e.Prefix != "" {
			page.CommonPrefixes = append(page.CommonPrefixes, e.Prefix)
		} else {
			page.Objects = append(page.Objects, infoFromAttrs(e))
		}
	}
	if more && len(entries) > 0 {
		page.NextToken = encodeToken(entryName(entries[len(entries)-1]))
	}
	return page, nil
}

// entryName is an object's key or a common prefix.
func entryName(a *storage.ObjectAttrs) string {
	if a.Prefix != "" {
		return a.Prefix
	}
	return a.Name
}

// sortEntries orders objects and prefixes together, drops duplicates and,
// when skip is set, every entry not strictly after the given name.
func sortEntries(attrs []*storage.ObjectAttrs, after string, skip bool) []*storage.ObjectAttrs {
	slices.SortStableFunc(attrs, func(a, b *storage.ObjectAttrs) int {
		return strings.Compare(entryName(a), entryName(b))
	})
	out := attrs[:0]
	for _, a := range attrs {
		name := entryName(a)
		if skip && name <= after {
			continue
		}
		if n := len(out); n > 0 && entryName(out[n-1]) == name {
			continue
		}
		out = append(out, a)
	}
	return out
}

// encodeToken and decodeToken make a continuation token of the last entry
// returned. Tokens are opaque to callers; base64 keeps any key printable.
func encodeToken(last string) string { return base64.RawURLEncoding.EncodeToString([]byte(last)) }

func decodeToken(tok string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", fmt.Errorf("gcsstore: list: continuation token %q was not made by this adapter", tok)
	}
	return string(b), nil
}

// DeletePrefix lists every object under prefix and deletes them with up to
// cfg.UploadConcurrency requests in flight. Objects that vanish meanwhile
// are not counted. The first failure stops the walk and is returned with
// the count so far.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		deleted  atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error // written once under errOnce, read after wg.Wait
	)
	names := make(chan string)
	for range s.cfg.UploadConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				if err := s.deleteCounted(ctx, name, &deleted); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
	listErr := objstore.ListAll(ctx, s, objstore.ListOptions{Prefix: prefix}, func(p objstore.ListPage) error {
		for _, o := range p.Objects {
			select {
			case names <- o.Key:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	close(names)
	wg.Wait()

	n := int(deleted.Load())
	if firstErr != nil {
		return n, firstErr
	}
	if listErr != nil {
		return n, fmt.Errorf("gcsstore: delete prefix %q: %w", prefix, listErr)
	}
	return n, nil
}

// deleteCounted deletes one object, counting it only if it was there.
func (s *Store) deleteCounted(ctx context.Context, key string, deleted *atomic.Int64) error {
	rctx, cancel := s.requestCtx(ctx)
	defer cancel()
	err := mapErr(opDelete, key, s.bucket.Object(key).Delete(rctx))
	switch {
	case err == nil:
		deleted.Add(1)
		return nil
	case errors.Is(err, objstore.ErrNotFound):
		return nil
	}
	return err
}
