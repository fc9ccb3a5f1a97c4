package tiersweep

import (
	"os"
	"testing"

	"github.com/basin-csi/basin/internal/testserver"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testserver.Shutdown()
	os.Exit(code)
}
