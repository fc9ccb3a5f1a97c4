package objstoretest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/basin-csi/basin/pkg/objstore"
)

// defaultMaxKeys is the page size when ListOptions.MaxKeys is 0, as in S3.
const defaultMaxKeys = 1000

// Continuation tokens name the last item of the previous page: "o" + an
// object key, or "p" + a common prefix (whose keys are all skipped).
const (
	tokenObject = "o"
	tokenPrefix = "p"
)

// List implements objstore.Store.
func (f *Fake) List(ctx context.Context, opts objstore.ListOptions) (objstore.ListPage, error) {
	if err := f.begin(ctx, OpList, opts.Prefix); err != nil {
		return objstore.ListPage{}, err
	}
	max := opts.MaxKeys
	if max <= 0 {
		max = defaultMaxKeys
	}
	after, skipPrefix := "", ""
	if t := opts.ContinuationToken; t != "" {
		switch {
		case strings.HasPrefix(t, tokenObject):
			after = t[len(tokenObject):]
		case strings.HasPrefix(t, tokenPrefix) && len(t) > len(tokenPrefix):
			skipPrefix = t[len(tokenPrefix):]
			after = skipPrefix
		default:
			return objstore.ListPage{}, fmt.Errorf("objstoretest: bad continuation token %q", t)
		}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	var page objstore.ListPage
	n, last := 0, ""
	i, _ := slices.BinarySearch(f.keys, max2(opts.Prefix, after))
	for ; i < len(f.keys); i++ {
		key := f.keys[i]
		if !strings.HasPrefix(key, opts.Prefix) {
			break
		}
		if key <= after && skipPrefix == "" || skipPrefix != "" && (key < skipPrefix || strings.HasPrefix(key, skipPrefix)) {
			continue
		}
		item, isPrefix := key, false
		if opts.Delimiter != "" {
			if j := strings.Index(key[len(opts.Prefix):], opts.Delimiter); j >= 0 {
				item, isPrefix = key[:len(opts.Prefix)+j+len(opts.Delimiter)], true
				if item == last {
					continue
				}
			}
		}
		if n == max {
			page.NextToken = lastToken(page)
			break
		}
		n++
		last = item
		if isPrefix {
			page.CommonPrefixes = append(page.CommonPrefixes, item)
		} else {
			page.Objects = append(page.Objects, f.objects[key].info(key))
		}
	}
	return page, nil
}

func max2(a, b string) string {
	if a > b {
		return a
	}
	return b
}

// lastToken names the greatest item of page.
func lastToken(page objstore.ListPage) string {
	o, p := "", ""
	if n := len(page.Objects); n > 0 {
		o = page.Objects[n-1].Key
	}
	if n := len(page.CommonPrefixes); n > 0 {
		p = page.CommonPrefixes[n-1]
	}
	if p > o {
		return tokenPrefix + p
	}
	return tokenObject + o
}
