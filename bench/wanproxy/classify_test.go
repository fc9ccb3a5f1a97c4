package wanproxy

import (
	"net/http/httptest"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name, method, target string
		want                 Kind
	}{
		{"s3 get object", "GET", "/bkt/dir/file.bin", KindGet},
		{"s3 ranged get part", "GET", "/bkt/ckpt/shard-0?partNumber=2", KindGet},
		{"s3 head object", "HEAD", "/bkt/dir/file.bin", KindHead},
		{"s3 head bucket", "HEAD", "/bkt", KindOther},
		{"s3 list v2", "GET", "/bkt?list-type=2&prefix=dir%2F&delimiter=%2F", KindList},
		{"s3 list v1 trailing slash", "GET", "/bkt/?prefix=a&delimiter=%2F", KindList},
		{"s3 list multipart uploads", "GET", "/bkt?uploads", KindOther},
		{"s3 bucket location", "GET", "/bkt?location", KindOther},
		{"s3 list buckets", "GET", "/", KindOther},
		{"s3 list parts", "GET", "/bkt/key?uploadId=abc", KindOther},
		{"s3 object acl", "GET", "/bkt/key?acl", KindOther},
		{"s3 put object", "PUT", "/bkt/key", KindPut},
		{"s3 upload part", "PUT", "/bkt/key?partNumber=1&uploadId=x", KindPut},
		{"s3 initiate multipart", "POST", "/bkt/key?uploads", KindPut},
		{"s3 create bucket", "PUT", "/bkt", KindOther},
		{"s3 delete object", "DELETE", "/bkt/key", KindOther},
		{"s3 multi delete", "POST", "/bkt?delete", KindOther},
		{"gcs list", "GET", "/storage/v1/b/bkt/o?prefix=a%2F&delimiter=%2F", KindList},
		{"gcs object metadata", "GET", "/storage/v1/b/bkt/o/dir%2Ffile", KindHead},
		{"gcs media json", "GET", "/storage/v1/b/bkt/o/dir%2Ffile?alt=media", KindGet},
		{"gcs download path", "GET", "/download/storage/v1/b/bkt/o/f?alt=media", KindGet},
		{"gcs xml read", "GET", "/bkt/dir/file", KindGet},
		{"gcs upload multipart", "POST", "/upload/storage/v1/b/bkt/o?uploadType=multipart", KindPut},
		{"gcs resumable chunk", "PUT", "/upload/storage/v1/b/bkt/o?upload_id=x", KindPut},
		{"gcs bucket metadata", "GET", "/storage/v1/b/bkt", KindOther},
		{"gcs delete", "DELETE", "/storage/v1/b/bkt/o/f", KindOther},
		{"gcs copy", "POST", "/storage/v1/b/bkt/o/f/copyTo/b/bkt/o/g", KindOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			if got := Classify(r); got != tc.want {
				t.Errorf("Classify(%s %s) = %s, want %s", tc.method, tc.target, got, tc.want)
			}
		})
	}
}

func TestSnapshotSubAndTotal(t *testing.T) {
	before := Snapshot{KindGet: {Requests: 1, BytesOut: 10}}
	after := Snapshot{KindGet: {Requests: 4, BytesOut: 70}, KindPut: {Requests: 2, BytesIn: 5}}
	d := after.Sub(before)
	if d[KindGet] != (Counter{Requests: 3, BytesOut: 60}) || d[KindPut] != (Counter{Requests: 2, BytesIn: 5}) {
		t.Fatalf("Sub = %+v", d)
	}
	if tot := d.Total(); tot != (Counter{Requests: 5, BytesIn: 5, BytesOut: 60}) {
		t.Fatalf("Total = %+v", tot)
	}
}
