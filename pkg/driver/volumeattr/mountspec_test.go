package volumeattr

import (
	"reflect"
	"testing"
	"time"

	"github.com/basin-csi/basin/pkg/mountspec"
)

// notMountSettings are the Attributes fields that deliberately do not
// reach the mount spec, and why.
var notMountSettings = map[string]string{
	"Warmup":        "the node plugin reads the paths itself after NodeStageVolume",
	"Provisioning":  "CreateVolume only",
	"Reclaim":       "DeleteVolume only",
	"CacheAffinity": "read from the PV by the placement webhook, never by a mount",
	"Secrets":       "credentials travel beside the spec in the hand-off file, never in it",
}

// TestEveryAttributeLandsInMountSpec changes each field of Attributes in
// turn and fails if the mount spec does not change: a new attribute must
// either reach the mount or be listed in notMountSettings with a reason.
func TestEveryAttributeLandsInMountSpec(t *testing.T) {
	base, err := Parse(map[string]string{KeyBucket: "bkt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := base.MountSpec()
	if err := want.Validate(); err != nil {
		t.Fatalf("the default spec is not valid: %v", err)
	}
	typ := reflect.TypeFor[Attributes]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if _, ok := notMountSettings[f.Name]; ok {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			a := base
			v := reflect.ValueOf(&a).Elem().Field(i)
			switch {
			case f.Type == reflect.TypeFor[time.Duration]():
				v.SetInt(v.Int() + int64(time.Second))
			case v.Kind() == reflect.String:
				v.SetString(v.String() + "x")
			case v.Kind() == reflect.Bool:
				v.SetBool(!v.Bool())
			case v.CanInt():
				v.SetInt(v.Int() + 4096)
			case v.CanUint():
				v.SetUint(v.Uint() ^ 0o007)
			case f.Type == reflect.TypeFor[[]string]():
				v.Set(reflect.ValueOf([]string{"noexec"}))
			default:
				t.Fatalf("the test does not know how to change a %s; teach it", f.Type)
			}
			if reflect.DeepEqual(a.MountSpec(), want) {
				t.Errorf("Attributes.%s does not land in the mount spec: map it in MountSpec or list it in notMountSettings with the reason", f.Name)
			}
		})
	}
	for name := range notMountSettings {
		if _, ok := typ.FieldByName(name); !ok {
			t.Errorf("notMountSettings lists %s, which Attributes no longer has", name)
		}
	}
}

// TestDefaultsAreMountDefaults: a volume without attributes mounts with
// mountspec's defaults, which are the only ones.
func TestDefaultsAreMountDefaults(t *testing.T) {
	a, err := Parse(map[string]string{KeyBucket: "bkt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := mountspec.Default()
	want.Bucket = "bkt"
	if got := a.MountSpec(); !reflect.DeepEqual(got, want) {
		t.Errorf("MountSpec() = %+v\nwant %+v", got, want)
	}
}

func TestMountOptionRoMakesReadOnly(t *testing.T) {
	a, err := Parse(map[string]string{KeyBucket: "bkt", KeyMountOptions: "ro,noexec"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := a.MountSpec()
	if f := s.Flags(); !s.ReadOnly || !f.ReadOnly || !f.NoExec || f.NoAtime {
		t.Errorf("spec %+v flags %+v", s, f)
	}
}
