package main

import (
	"io"
	"strings"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/calibrate"
)

// calibrateFromTrace is dcpsim calibrate --from-trace: read, check and
// compare a Kineto trace against a profile, and with --out fit the curves it
// determines onto it.
func calibrateFromTrace(f calibrateFlags, stdout io.Writer) error {
	for _, name := range []string{"backend", "budget", "measurements", "workers", "device", "ranks", "from", "from-nccl-tests", "nccl-program", "nccl-ranks", "nccl-gpus-per-node"} {
		if f.set[name] {
			return badInput("--%s does not go with --from-trace", name)
		}
	}
	var base *calib.Profile
	var err error
	switch {
	case f.gpu != "" && f.base != "":
		return badInput("--from-trace: give --gpu KIND or --base FILE.toml, not both")
	case f.gpu != "":
		if base, err = calib.LookupProfile(f.gpu); err != nil {
			return badInput("--gpu %q: %v", f.gpu, err)
		}
	case f.base != "":
		if base, err = loadBase(f.base); err != nil {
			return err
		}
	default:
		return badInput("--from-trace needs --gpu KIND (known: %s) or --base FILE.toml: the profile to predict with and fit onto", strings.Join(calib.ProfileNames(), ", "))
	}
	if f.out != "" {
		if err := checkOutFile("--out", f.out); err != nil {
			return err
		}
		for _, in := range []struct{ flag, path string }{{"--from-trace", f.trace}, {"--base", f.base}} {
			if err := checkNotInput("--out", f.out, in.flag, in.path); err != nil {
				return err
			}
		}
	} else if f.set["name"] {
		return badInput("--name goes with --out (the profile written)")
	}
	name, err := profileName(f.name, base.Name)
	if err != nil {
		return err
	}
	return flagged("--from-trace", calibrate.FromTrace(f.trace, base, calibrate.Target{Name: name, Out: f.out}, stdout))
}
