package volumeattr

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/basin-csi/basin/pkg/mountspec"
)

// Parse turns StorageClass parameters or PV volume attributes, and the
// secret that goes with them, into Attributes. The mount settings are
// mountspec.ParseAttributes'; missing keys take their defaults; keys
// Kubernetes adds itself are ignored. Every problem is reported at once:
// the error joins one error per problem and wraps ErrInvalid. Errors
// quote parameter values but never secret values.
func Parse(params, secrets map[string]string) (Attributes, error) {
	s, errs := parseSecrets(secrets)
	params, merrs := mergeSecretConnection(params, s)
	errs = append(errs, merrs...)
	spec, other, err := mountspec.ParseAttributes(params)
	if err != nil {
		errs = append(errs, err)
	}
	a := Attributes{Spec: spec, Reclaim: DefaultReclaim, CacheAffinity: true, Secrets: s}
	byKey := make(map[string]field)
	for _, f := range fields() {
		byKey[f.key] = f
	}
	var unknown []string
	for _, k := range other {
		f, ok := byKey[k]
		switch {
		case IsKubernetesKey(k):
		case !ok:
			unknown = append(unknown, k)
		default:
			if err := f.parse(&a, params[k]); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", k, err))
			}
		}
	}
	if len(unknown) > 0 {
		errs = append(errs, unknownKeysError(unknown, Keys()))
	}
	if _, ok := params[KeyProvisioning]; !ok {
		a.Provisioning = ProvisionBucket
		if a.Bucket != "" {
			a.Provisioning = ProvisionPrefix
		}
	}
	errs = append(errs, s.checkBackend(a.Backend)...)
	errs = append(errs, a.crossCheck()...)
	if len(errs) > 0 {
		return Attributes{}, invalid(errs)
	}
	return a, nil
}

// mergeSecretConnection returns params with the endpoint and region of
// the secret where params leave them out; both places must agree when both
// set them. The secret's values are not quoted.
func mergeSecretConnection(params map[string]string, s Secrets) (map[string]string, []error) {
	var errs []error
	merged := maps.Clone(params)
	for _, kv := range [][2]string{{mountspec.KeyEndpoint, s.Endpoint}, {mountspec.KeyRegion, s.Region}} {
		key, secret := kv[0], kv[1]
		if secret == "" {
			continue
		}
		if v, ok := params[key]; ok {
			if v != secret {
				errs = append(errs, fmt.Errorf("%s: the parameters and the secret set different values; set it in one place", key))
			}
			continue
		}
		if merged == nil {
			merged = map[string]string{}
		}
		merged[key] = secret
	}
	return merged, errs
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
