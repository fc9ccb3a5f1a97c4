package volumeattr

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Parse turns StorageClass parameters or PV volume attributes, and the
// secret that goes with them, into Attributes. Missing keys take their
// defaults; keys Kubernetes adds itself are ignored. Every problem is
// reported at once: the error joins one error per problem and wraps
// ErrInvalid. Errors quote parameter values but never secret values.
func Parse(params, secrets map[string]string) (Attributes, error) {
	a := Defaults()
	var errs []error
	given := make(map[string]bool, len(params))
	table := fields()
	byKey := make(map[string]field, len(table))
	for _, f := range table {
		byKey[f.key] = f
	}
	var unknown []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if IsKubernetesKey(k) {
			continue
		}
		f, ok := byKey[k]
		if !ok {
			unknown = append(unknown, k)
			continue
		}
		given[k] = true
		if err := f.parse(&a, params[k]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	if len(unknown) > 0 {
		errs = append(errs, unknownKeysError(unknown, Keys()))
	}
	if !given[KeyProvisioning] {
		a.Provisioning = ProvisionBucket
		if a.Bucket != "" {
			a.Provisioning = ProvisionPrefix
		}
	}

	s, serrs := parseSecrets(secrets)
	errs = append(errs, serrs...)
	a.Secrets = s
	errs = append(errs, s.checkBackend(a.Backend)...)
	errs = append(errs, a.mergeSecretConnection(given)...)
	errs = append(errs, a.crossCheck(given)...)

	if len(errs) > 0 {
		return Attributes{}, invalid(errs)
	}
	return a, nil
}

// mergeSecretConnection takes endpoint and region from the secret when the
// parameters leave them out; both places must agree when both set them.
// The secret's values are not quoted.
func (a *Attributes) mergeSecretConnection(given map[string]bool) []error {
	var errs []error
	merge := func(key string, attr *string, secret string) {
		if secret == "" {
			return
		}
		if given[key] && *attr != secret {
			errs = append(errs, fmt.Errorf("%s: the parameters and the secret set different values; set it in one place", key))
			return
		}
		*attr = secret
		given[key] = true
	}
	merge(KeyEndpoint, &a.Endpoint, a.Secrets.Endpoint)
	merge(KeyRegion, &a.Region, a.Secrets.Region)
	return errs
}

// unknownKeysError names the unknown keys and lists the accepted ones.
func unknownKeysError(unknown, accepted []string) error {
	quoted := make([]string, len(unknown))
	for i, k := range unknown {
		quoted[i] = fmt.Sprintf("%q", k)
	}
	noun := "key"
	if len(unknown) > 1 {
		noun = "keys"
	}
	return fmt.Errorf("unknown %s %s (accepted: %s)", noun, strings.Join(quoted, ", "), strings.Join(accepted, ", "))
}

// invalid joins errs under ErrInvalid.
func invalid(errs []error) error {
	return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
}
