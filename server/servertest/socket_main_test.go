package servertest_test

import (
	"testing"

	"github.com/netmgr/netmgr/internal/sockettest"
)

func TestMain(m *testing.M) { sockettest.Main(m) }
