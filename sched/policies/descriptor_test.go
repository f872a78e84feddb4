package policies

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/milp"
	"github.com/dcpsim/dcpsim/sched"
)

// TestDescriptors: every entry is complete (name, summary, a valid CP
// execution, an options struct whose defaults build), names are sorted and
// unique, and New refuses options of another policy's type.
func TestDescriptors(t *testing.T) {
	all := All()
	if !slices.IsSorted(Names()) || len(slices.Compact(Names())) != len(all) {
		t.Fatalf("names not sorted and unique: %v", Names())
	}
	for i, d := range all {
		if d.Name == "" || d.Summary == "" || !d.Exec.Valid() || d.Options == nil || d.New == nil {
			t.Errorf("%q: incomplete descriptor %+v", d.Name, d)
			continue
		}
		o := d.Options()
		if v := reflect.ValueOf(o); v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			t.Errorf("%s: Options() returns %T, want a pointer to a struct", d.Name, o)
		}
		env := sched.Env{}
		if d.Requires.Program != "" {
			env.Solver = unusedSolver{}
			if _, err := d.New(nil, sched.Env{}); !errors.Is(err, sched.ErrEnvMissing) || d.CheckOptions(nil) != nil {
				t.Errorf("%s: requires %s, but New without a solver = %v (CheckOptions %v)", d.Name, d.Requires.Program, err, d.CheckOptions(nil))
			}
		}
		for _, opts := range []any{nil, o} {
			p, err := d.New(opts, env)
			if err != nil || p == nil || p.Name() != d.Name {
				t.Errorf("%s: New(%v) = %v, %v", d.Name, opts, p, err)
			}
		}
		keys := d.OptionKeys()
		if len(slices.Compact(slices.Sorted(slices.Values(keys)))) != len(keys) {
			t.Errorf("%s: duplicate option keys %v", d.Name, keys)
		}
		for _, k := range keys {
			if !d.HasOption(k) || d.HasOption(k+"x") {
				t.Errorf("%s: HasOption(%q)", d.Name, k)
			}
		}
		other := all[(i+2)%len(all)] // hydra and hydra-scan share their options type
		if reflect.TypeOf(other.Options()) != reflect.TypeOf(o) {
			if err := d.CheckOptions(other.Options()); err == nil || !strings.Contains(err.Error(), "options of type") {
				t.Errorf("%s: New with %s's options: %v", d.Name, other.Name, err)
			}
		}
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "known: "+strings.Join(Names(), ", ")) {
		t.Errorf("Lookup(nope) = %v", err)
	}
	if d, err := Lookup("hydra"); err != nil || d.Exec != sched.UlyssesRing || !d.OverlapAllToAll || !slices.Equal(d.OptionKeys(), []string{"cap"}) {
		t.Errorf("Lookup(hydra) = %+v, %v", d, err)
	}
}

// unusedSolver is a MILP solver for tests that build a policy and never plan.
type unusedSolver struct{}

func (unusedSolver) Solve(context.Context, *milp.Model, milp.Limits) (*milp.Solution, error) {
	return nil, errors.New("unusedSolver: not for solving")
}

// TestOptionErrorsNameTheKey: a constructor's refusal names the policy and the
// key.
func TestOptionErrorsNameTheKey(t *testing.T) {
	d, _ := Lookup("mcore")
	o := d.Options()
	reflect.ValueOf(o).Elem().FieldByName("MinCPSize").SetInt(3)
	if _, err := d.New(o, sched.Env{}); err == nil || !strings.Contains(err.Error(), "policy mcore: min_cp_size = 3") {
		t.Errorf("mcore min_cp_size 3: %v", err)
	}
}
