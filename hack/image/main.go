// Command image writes a container image tarball without a container
// engine (internal/ociimage): `make image` builds Basin's image with it,
// and the cluster test its pause, csi-provisioner and busybox images.
//
//	go run ./hack/image --tag ghcr.io/basin-csi/basin:v1 --out basin.tar \
//	    --file bin/csi-driver:/usr/local/bin/csi-driver:0755 \
//	    --entrypoint /usr/local/bin/csi-driver
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/basin-csi/basin/internal/ociimage"
)

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	var spec ociimage.Spec
	var out, entrypoint string
	var files, links, labels, env list
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.StringVar(&spec.Tag, "tag", "", "image `reference` with tag")
	fs.StringVar(&out, "out", "", "image tarball to write")
	fs.StringVar(&entrypoint, "entrypoint", "", "entrypoint, arguments separated by spaces")
	fs.Var(&files, "file", "`SRC:DST:MODE` a file of this machine at DST in the image, octal MODE (repeatable)")
	fs.Var(&links, "symlink", "`PATH:TARGET` a symbolic link (repeatable)")
	fs.Var(&labels, "label", "`KEY=VALUE` an image label (repeatable)")
	fs.Var(&env, "env", "`KEY=VALUE` an environment variable (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if spec.Tag == "" || out == "" || entrypoint == "" {
		return fmt.Errorf("--tag, --out and --entrypoint are required")
	}
	spec.Entrypoint = strings.Fields(entrypoint)
	spec.Env = env
	for _, f := range files {
		parts := strings.Split(f, ":")
		if len(parts) != 3 {
			return fmt.Errorf("--file %q: want SRC:DST:MODE", f)
		}
		mode, err := strconv.ParseUint(parts[2], 8, 32)
		if err != nil || mode > 0o777 {
			return fmt.Errorf("--file %q: MODE must be octal permission bits", f)
		}
		spec.Files = append(spec.Files, ociimage.File{Source: parts[0], Path: parts[1], Mode: os.FileMode(mode)})
	}
	for _, l := range links {
		p, target, ok := strings.Cut(l, ":")
		if !ok {
			return fmt.Errorf("--symlink %q: want PATH:TARGET", l)
		}
		spec.Symlinks = append(spec.Symlinks, ociimage.Symlink{Path: p, Target: target})
	}
	if len(labels) > 0 {
		spec.Labels = map[string]string{}
		for _, l := range labels {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return fmt.Errorf("--label %q: want KEY=VALUE", l)
			}
			spec.Labels[k] = v
		}
	}
	digest, err := ociimage.Write(spec, out)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s\n", out, spec.Tag, digest)
	return nil
}
