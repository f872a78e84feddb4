package experiment

import (
	"context"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/results"
	"strings"
	"time"

	"github.com/dcpsim/dcpsim/internal/extpolicy"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
)

// descriptorFor returns the descriptor of a scenario's policy: a built-in
// one, or the one of its [run.external.NAME] policy, which plans as the
// scenario's costs.cp_exec.NAME says (default Ulysses, all-to-alls exposed,
// overridable by costs.cp_overlap.NAME) and is built by startExternal.
func descriptorFor(sc *scenarios.Scenario, name string) (policies.Descriptor, error) {
	if ext, ok := sc.Run.External[name]; ok {
		return policies.Descriptor{Name: name, Summary: "external: " + strings.Join(ext.Command, " "), Exec: sched.Ulysses}, nil
	}
	d, err := policies.Lookup(name)
	if err != nil {
		return d, badInput("%w", err)
	}
	return d, nil
}

// externalLogName is the results-folder file of an external policy's stderr.
func externalLogName(name string) string { return "external-" + safeio.SafeName(name) + ".log" }

// startExternal starts the process of the scenario's external policy name,
// in the scenario's folder, with the job's token costs, when allow says the
// person running dcpsim consented (CheckExec refuses earlier; this is the
// one place a scenario's program starts, so it checks again).
func startExternal(ctx context.Context, sc *scenarios.Scenario, name string, setup *Setup, allow bool) (*extpolicy.Policy, error) {
	if err := CheckExec(sc, allow, name); err != nil {
		return nil, err
	}
	ext := sc.Run.External[name]
	tc := setup.TokenCosts
	return extpolicy.Start(ctx, extpolicy.Spec{
		Name: name, Command: ext.Command, Dir: scenarioDir(sc), Options: ext.Options,
		Timeout: time.Duration(ext.TimeoutSeconds * float64(time.Second)), TokenCosts: &tc,
	})
}

// closeExternal ends a run's external policy process and records it in the
// summary; its log goes to out.
func (r *policyRun) closeExternal(out *Outcome) {
	if r.ext == nil {
		return
	}
	run := &results.ExternalRun{Command: r.sc.Run.External[r.desc.Name].Command, Log: externalLogName(r.desc.Name), MeasuredStall: r.ext.MeasuredStall()}
	if err := r.ext.Close(); err != nil {
		run.CloseError = err.Error()
	}
	r.sum.External = run
	out.Logs = append(out.Logs, Log{File: run.Log, Data: r.ext.Log()})
}

// Log is one log file of a run's results folder (an external policy's
// stderr).
type Log struct {
	// File is the name in the results folder.
	File string
	// Data is its content.
	Data []byte
}
