package engine_test

import (
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }
