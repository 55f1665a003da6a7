package statefulset

import (
	"testing"

	"skiff.dev/services/controller-manager/manager/managertest"
)

func TestMain(m *testing.M) { managertest.VerifyTestMain(m) }
