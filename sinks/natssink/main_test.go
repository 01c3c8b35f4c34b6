package natssink_test

import (
	"os"
	"testing"

	"github.com/zkherald/herald/internal/natsserver"
)

// url is the package's shared server; tests that stop a server or need
// authentication start their own.
var url string

func TestMain(m *testing.M) { os.Exit(natsserver.TestMain(m, func(u string) { url = u })) }
