//go:build !(cuda && cgo)

package cuda

import (
	"fmt"

	"github.com/dcpsim/dcpsim/hwbackend"
)

// New returns hwbackend.ErrNoDevice: this binary was built without the cuda
// build tag or without cgo, so it holds no CUDA code at all.
func New(opts Options) (hwbackend.Backend, error) {
	return nil, fmt.Errorf("cuda: built without `-tags cuda` and cgo (rebuild with CGO_ENABLED=1 go build -tags cuda): %w",
		hwbackend.ErrNoDevice)
}

// builtWithCUDA tells the tests which build they run in.
const builtWithCUDA = false
