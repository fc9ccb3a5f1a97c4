package volumeattr

// Encode returns the canonical attribute map of a: every setting written
// out (defaults included) so that a volume keeps the configuration it was
// created with, and the only keys left out are the unset optional ones
// (bucket, prefix, endpoint, region, project, uid, gid, mountOptions,
// warmup). The mount settings are mountspec.Spec.Attributes.
// Secrets are never encoded. For valid a, Parse(Encode(a), secrets) == a
// where secrets is a.Secrets.Map().
func Encode(a Attributes) map[string]string {
	m := a.Attributes() // the mount settings: mountspec.Spec.Attributes
	for _, f := range fields() {
		if v := f.format(a); v != "" {
			m[f.key] = v
		}
	}
	return m
}
