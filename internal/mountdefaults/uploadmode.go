package mountdefaults

// UploadMode says when the content of a written file goes to the bucket.
type UploadMode string

const (
	// UploadSync uploads inside close(2): close returns once the object
	// is in the bucket (or fails).
	UploadSync UploadMode = "sync"
	// UploadAsync returns from close(2) once the content is staged
	// durably on the node's disk and uploads in the background, with
	// bounded concurrency and bounded staged bytes. fsync(2), a directory
	// fsync and unmount still wait for the upload; a successor process
	// uploads what a dead one acknowledged. Only the loss of the node's
	// disk can lose an acknowledged close.
	UploadAsync UploadMode = "async"
)

// UploadModes returns the accepted values, the default first.
func UploadModes() []UploadMode { return []UploadMode{UploadSync, UploadAsync} }

// Valid reports whether m is one of UploadModes; "" is not.
func (m UploadMode) Valid() bool { return m == UploadSync || m == UploadAsync }
