package wanproxy

import (
	"net/http"
	"net/url"
	"strings"
)

// Kind is the class of an object-store request, for request-cost reports.
type Kind string

// The request kinds. GET is a data read, HEAD a metadata read (S3 HEAD,
// GCS object metadata), LIST a listing, PUT any upload step (PUT, POST of
// a multipart or resumable upload), OTHER everything else (delete, copy,
// bucket calls).
const (
	KindGet   Kind = "GET"
	KindHead  Kind = "HEAD"
	KindList  Kind = "LIST"
	KindPut   Kind = "PUT"
	KindOther Kind = "OTHER"
)

// Kinds lists every Kind in report order.
var Kinds = []Kind{KindGet, KindHead, KindList, KindPut, KindOther}

// hasS3Subresource reports whether q names a bucket- or object-level
// subresource: calls that are neither data nor listing requests.
func hasS3Subresource(q url.Values) bool {
	for _, sub := range []string{
		"acl", "attributes", "cors", "delete", "encryption", "lifecycle", "location",
		"legal-hold", "object-lock", "policy", "retention", "tagging", "versioning",
	} {
		if q.Has(sub) {
			return true
		}
	}
	return false
}

// Classify returns the Kind of r, for both the S3 REST API (path-style) and
// the GCS JSON and XML APIs.
func Classify(r *http.Request) Kind {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/storage/v1/"), strings.HasPrefix(p, "/upload/storage/v1/"),
		strings.HasPrefix(p, "/download/storage/v1/"):
		return classifyGCS(r.Method, p, r.URL.Query())
	default:
		return classifyS3(r.Method, p, r.URL.Query())
	}
}

func classifyGCS(method, path string, q url.Values) Kind {
	if strings.HasPrefix(path, "/upload/") {
		return KindPut
	}
	// /storage/v1/b/{bucket}/o[/{object}[/copyTo|rewriteTo/...]]
	rest := strings.TrimPrefix(strings.TrimPrefix(path, "/download"), "/storage/v1/b/")
	_, afterBucket, ok := strings.Cut(rest, "/")
	if !ok || method != http.MethodGet && method != http.MethodHead {
		return KindOther
	}
	switch {
	case afterBucket == "o" || afterBucket == "o/":
		return KindList
	case !strings.HasPrefix(afterBucket, "o/"):
		return KindOther
	case strings.HasPrefix(path, "/download/") || q.Get("alt") == "media":
		return KindGet
	default:
		return KindHead
	}
}

func classifyS3(method, path string, q url.Values) Kind {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if hasS3Subresource(q) {
		return KindOther
	}
	switch method {
	case http.MethodHead:
		if key == "" {
			return KindOther
		}
		return KindHead
	case http.MethodGet:
		switch {
		case bucket == "":
			return KindOther // ListBuckets
		case key == "":
			if q.Has("uploads") {
				return KindOther
			}
			return KindList
		case q.Has("uploadId"):
			return KindOther // ListParts
		default:
			return KindGet
		}
	case http.MethodPut, http.MethodPost:
		if key == "" {
			return KindOther
		}
		return KindPut
	default:
		return KindOther
	}
}
