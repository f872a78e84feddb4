package scenarios

import (
	"fmt"
	"math"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/workload"
)

func (p *parser) workload(md *toml.MetaData, w rawWorkload, gpus int) Workload {
	out := Workload{Preset: w.Preset, File: w.File, Field: w.Field, ContextTokens: w.ContextTokens}
	if !md.IsDefined("workload") {
		p.addf("workload", "[workload]: required (preset or component or file, context_tokens, batch_tokens)")
		return out
	}
	sources := 0
	for _, set := range []bool{w.Preset != "", len(w.Components) > 0, w.File != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		p.addf("workload", "[workload]: give exactly one of preset (%s), [[workload.component]] or file; got %d",
			strings.Join(workload.PresetNames(), ", "), sources)
	}
	switch {
	case w.Preset != "":
		d, err := workload.Preset(w.Preset)
		if err != nil {
			p.addf("workload.preset", "workload.preset = %q: unknown distribution; known: %s", w.Preset, strings.Join(workload.PresetNames(), ", "))
		}
		out.Distribution = d
	case len(w.Components) > 0:
		out.Distribution = p.components(w.Components)
	case w.File != "":
		switch w.Format {
		case "":
			if strings.HasSuffix(w.File, ".jsonl") {
				out.Format = "jsonl"
			} else {
				out.Format = "lengths"
			}
		case "lengths", "jsonl":
			out.Format = w.Format
		default:
			p.addf("workload.format", "workload.format = %q: must be \"lengths\" (text or CSV) or \"jsonl\"", w.Format)
		}
		if out.Format == "jsonl" && out.Field == "" {
			out.Field = "length"
		}
		if out.Format == "lengths" && w.Field != "" {
			p.addf("workload.field", "workload.field = %q: only used with format = \"jsonl\"", w.Field)
		}
	}
	if w.File == "" {
		for _, k := range []string{"format", "field"} {
			if md.IsDefined("workload", k) {
				p.addf("workload."+k, "workload.%s: only used with workload.file", k)
			}
		}
	}
	order, err := workload.ParseListOrder(w.Order)
	if err != nil {
		p.addf("workload.order", "workload.order = %q: must be \"resample\" or \"sequential\"", w.Order)
	}
	out.Order = order
	ov, err := workload.ParseOverlong(w.Overlong)
	if err != nil {
		p.addf("workload.overlong", "workload.overlong = %q: must be \"split\" or \"drop\"", w.Overlong)
	}
	out.Overlong = ov

	if !md.IsDefined("workload", "context_tokens") {
		p.addf("workload.context_tokens", "workload.context_tokens: required, in [1, %d]", job.MaxContextTokens)
	}
	hasTotal, hasPerGPU := md.IsDefined("workload", "batch_tokens"), md.IsDefined("workload", "batch_tokens_per_gpu")
	switch {
	case hasTotal && hasPerGPU:
		p.addf("workload.batch_tokens_per_gpu", "workload: give batch_tokens or batch_tokens_per_gpu, not both")
	case hasTotal:
		out.BatchTokens = w.BatchTokens
		if w.BatchTokens < 1 || w.BatchTokens > MaxBatchTokens {
			p.addf("workload.batch_tokens", "workload.batch_tokens = %d: must be in [1, %d]", w.BatchTokens, int64(MaxBatchTokens))
		}
	case hasPerGPU:
		out.BatchTokensPerGPU = w.BatchTokensPerGPU
		out.BatchTokens = w.BatchTokensPerGPU * int64(max(gpus, 0))
		if w.BatchTokensPerGPU < 1 || w.BatchTokensPerGPU > MaxBatchTokens {
			p.addf("workload.batch_tokens_per_gpu", "workload.batch_tokens_per_gpu = %d: must be in [1, %d]", w.BatchTokensPerGPU, int64(MaxBatchTokens))
		} else if gpus > 0 && out.BatchTokens > MaxBatchTokens {
			p.addf("workload.batch_tokens_per_gpu", "workload.batch_tokens_per_gpu = %d: times cluster.gpus (%d) gives %d tokens per batch; must be <= %d",
				w.BatchTokensPerGPU, gpus, out.BatchTokens, int64(MaxBatchTokens))
		}
	default:
		p.addf("workload.batch_tokens", "workload.batch_tokens (or batch_tokens_per_gpu): required, in [1, %d]", int64(MaxBatchTokens))
	}
	return out
}

// componentFields renames workload's Go field names to the TOML keys of
// [[workload.component]] in validation messages.
var componentFields = strings.NewReplacer("MedianTokens", "median_tokens", "Sigma", "sigma",
	"LowTokens", "min_tokens", "HighTokens", "max_tokens", "Alpha", "alpha")

// components builds a distribution from [[workload.component]] tables.
func (p *parser) components(cs []rawComponent) workload.Distribution {
	const key = "workload.component"
	var dists []workload.Distribution
	var weights []float64
	for i, c := range cs {
		at := fmt.Sprintf("%s[%d]", key, i)
		unused := func(name string, set bool) {
			if set {
				p.addf(key, "%s.%s: not used by kind %q", at, name, c.Kind)
			}
		}
		var d workload.Distribution
		switch c.Kind {
		case "lognormal":
			unused("alpha", c.Alpha != 0)
			unused("tokens", c.Tokens != nil)
			unused("cdf", c.CDF != nil)
			d = workload.LogNormal{MedianTokens: c.MedianTokens, Sigma: c.Sigma, LowTokens: c.MinTokens, HighTokens: c.MaxTokens}
		case "pareto":
			unused("median_tokens", c.MedianTokens != 0)
			unused("sigma", c.Sigma != 0)
			unused("tokens", c.Tokens != nil)
			unused("cdf", c.CDF != nil)
			d = workload.TruncatedPareto{LowTokens: c.MinTokens, HighTokens: c.MaxTokens, Alpha: c.Alpha}
		case "empirical":
			unused("median_tokens", c.MedianTokens != 0)
			unused("sigma", c.Sigma != 0)
			unused("alpha", c.Alpha != 0)
			unused("min_tokens", c.MinTokens != 0)
			unused("max_tokens", c.MaxTokens != 0)
			e, err := workload.NewEmpirical(c.Tokens, c.CDF)
			if err != nil {
				p.addf(key, "%s: %v", at, err)
				continue
			}
			d = e
		default:
			p.addf(key, "%s.kind = %q: must be \"lognormal\", \"pareto\" or \"empirical\"", at, c.Kind)
			continue
		}
		if err := d.Validate(); err != nil {
			p.addf(key, "%s: %s", at, componentFields.Replace(strings.ReplaceAll(err.Error(), "\n", "; ")))
			continue
		}
		w := c.Weight
		if len(cs) == 1 && w == 0 {
			w = 1
		}
		if !(w > 0) || math.IsInf(w, 0) {
			p.addf(key, "%s.weight = %v: must be > 0 (weights are normalised)", at, c.Weight)
			continue
		}
		dists = append(dists, d)
		weights = append(weights, w)
	}
	if len(dists) != len(cs) {
		return nil
	}
	if len(dists) == 1 {
		return dists[0]
	}
	m := workload.Mixture{Weights: weights, Components: dists}
	if err := m.Validate(); err != nil {
		p.addf(key, "%s: %v", key, err)
		return nil
	}
	return m
}

// BatchSpec is the workload's batch sampling spec for this scenario's seed.
func (s *Scenario) BatchSpec() workload.BatchSpec {
	return workload.BatchSpec{
		TargetTokens:  s.Workload.BatchTokens,
		ContextTokens: s.Workload.ContextTokens,
		Overlong:      s.Workload.Overlong,
		Seed:          s.Run.Seed,
	}
}

// meanTokens estimates E[min(L, context)] from the distribution's CDF by
// integrating the survival function on a log grid; it is only used to bound the
// number of sequences in a batch, so a few per cent of error do not matter.
func meanTokens(d workload.Distribution, context int) float64 {
	hi := float64(d.MaxTokens())
	if context > 0 && float64(context) < hi {
		hi = float64(context)
	}
	if hi <= 1 {
		return 1
	}
	const n = 2000
	mean := 1.0 // ∫_0^1 (1-F) dx, lengths are >= 1
	prevX, prevS := 1.0, 1-d.CDF(1)
	for i := 1; i <= n; i++ {
		x := math.Pow(hi, float64(i)/n)
		s := 1 - d.CDF(x)
		mean += (x - prevX) * (s + prevS) / 2
		prevX, prevS = x, s
	}
	return max(mean, 1)
}
