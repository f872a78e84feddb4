package job

import (
	"slices"
	"strings"
	"testing"
)

// TestMoELayerStep: which layers are MoE for each step, and the dense
// layers the model then has.
func TestMoELayerStep(t *testing.T) {
	for _, c := range []struct {
		layers, dense, step int
		moe                 []int
		hasDense            bool
	}{
		{6, 0, 0, []int{0, 1, 2, 3, 4, 5}, false},
		{6, 0, 1, []int{0, 1, 2, 3, 4, 5}, false},
		{6, 0, 2, []int{1, 3, 5}, true},  // Llama 4 Maverick: interleave_moe_layer_step 2
		{7, 1, 3, []int{3, 6}, true},     // dense first, then every third
		{61, 3, 1, seq(3, 61), true},     // DeepSeek-V3: first_k_dense_replace 3
		{4, 4, 0, nil, true},             // dense
		{5, 2, 3, []int{4}, true},        // one MoE layer
		{48, 0, 48, []int{47}, true},     // the step at its bound
		{48, 47, 1, []int{47}, true},     // the last layer alone
		{8, 0, 4, []int{3, 7}, true},     // every fourth
		{2, 0, 2, []int{1}, true},        // the smallest interleave
		{3, 0, 1, []int{0, 1, 2}, false}, // all MoE
		{10, 4, 2, []int{5, 7, 9}, true}, // dense prefix and interleave
		{9, 0, 3, []int{2, 5, 8}, true},  // phase: the step's last layer
		{1, 0, 1, []int{0}, false},       // one layer
		{16, 0, 16, []int{15}, true},     // only the last
		{12, 6, 6, []int{11}, true},      // prefix and one step
		{5, 0, 5, []int{4}, true},        // odd sizes
		{100, 0, 2, oddUpTo(100), true},  // long interleave
		{3, 3, 0, nil, true},             // dense, step unset
		{6, 5, 1, []int{5}, true},        // MoE last layer only
		{6, 0, 6, []int{5}, true},        // step = layers
		{7, 0, 7, []int{6}, true},        // step = layers, odd
		{2, 1, 1, []int{1}, true},        // half and half
		{4, 0, 2, []int{1, 3}, true},     // Maverick in small
		{4, 2, 2, []int{3}, true},        // prefix then interleave
		{64, 0, 1, seq(0, 64), false},    // Grok-1: every layer
		{94, 0, 1, seq(0, 94), false},    // Qwen3-235B-A22B: every layer
		{48, 0, 2, oddUpTo(48), true},    // Llama 4 Maverick: 24 of 48
		{10, 0, 10, []int{9}, true},      // bound
	} {
		m := Model{Layers: c.layers, DenseLayers: c.dense, MoELayerStep: c.step}
		var got []int
		for l := range c.layers {
			if m.IsMoELayer(l) {
				got = append(got, l)
			}
		}
		if !slices.Equal(got, c.moe) {
			t.Errorf("layers %d dense %d step %d: MoE layers %v, want %v", c.layers, c.dense, c.step, got, c.moe)
		}
		if m.HasDenseLayers() != c.hasDense {
			t.Errorf("layers %d dense %d step %d: HasDenseLayers = %v, want %v", c.layers, c.dense, c.step, m.HasDenseLayers(), c.hasDense)
		}
	}
}

func seq(lo, hi int) []int {
	var out []int
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

func oddUpTo(n int) []int {
	var out []int
	for i := 1; i < n; i += 2 {
		out = append(out, i)
	}
	return out
}

// TestActivationParams: a gated activation has three h×f matrices, the
// others two, in dense FFNs and experts alike; GeGLU counts as SwiGLU and
// squared ReLU as GELU.
func TestActivationParams(t *testing.T) {
	base := mustModel(t, ModelQwen3MoE30B)
	base.MoELayerStep = 2
	base.DenseFFN = 1024
	params := map[Activation]float64{}
	for _, a := range Activations {
		m := base
		m.Activation = a
		if err := m.Validate(); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		params[a] = m.TotalParams()
		if e := m.LayerExpertParams(1); e != float64(m.RoutedExperts)*m.ffnMatrices()*float64(m.Hidden*m.ExpertFFN) {
			t.Errorf("%s: expert params %g", a, e)
		}
	}
	if params[GeGLU] != params[SwiGLU] || params[SquaredReLU] != params[GELU] || params[GELU] >= params[SwiGLU] {
		t.Errorf("params by activation %v: want geglu = swiglu > gelu = squared-relu", params)
	}
	h, f := float64(base.Hidden), float64(base.DenseFFN)
	m := base
	m.Activation = GELU
	g := base
	g.Activation = SwiGLU
	if d := g.LayerParams(0) - m.LayerParams(0); d != h*f {
		t.Errorf("dense layer: swiglu − gelu = %g params, want h·f = %g", d, h*f)
	}
}

// TestPipelineLayout: ChunkRange follows the layout in Megatron's virtual
// order, StageLayers sums it, and Validate refuses a bad one.
func TestPipelineLayout(t *testing.T) {
	m := mustModel(t, ModelLlama3With8B) // 32 layers
	j := Job{Model: m, Cluster: Cluster{GPU: "H100-SXM", GPUs: 16, GPUsPerNode: 8},
		Parallel: Parallel{TP: 1, PP: 4, VPP: 2, EP: 1, BudgetTokens: 4096,
			// virtual stages 0..7: stage s holds virtual stages s and 4+s.
			PipelineLayout: "3,4,4,4,4,4,4,5"},
		ContextTokens: 4096}
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	stages, err := j.StageLayers()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stages, []int{7, 8, 8, 9}) {
		t.Errorf("stages %v, want [7 8 8 9]", stages)
	}
	first := 0
	for s, n := range stages {
		lo0, hi0 := j.Parallel.ChunkRange(s, first, n, 0)
		lo1, hi1 := j.Parallel.ChunkRange(s, first, n, 1)
		layout, _ := j.Parallel.Layout()
		if lo0 != first || hi0 != lo1 || hi1 != first+n || hi0-lo0 != layout[s] || hi1-lo1 != layout[4+s] {
			t.Errorf("stage %d: chunks [%d,%d) [%d,%d)", s, lo0, hi0, lo1, hi1)
		}
		first += n
	}
	// Without a layout: the near-even split, as before.
	j2 := j
	j2.Parallel.PipelineLayout = ""
	if lo, hi := j2.Parallel.ChunkRange(1, 8, 8, 1); lo != 12 || hi != 16 {
		t.Errorf("even chunk [%d,%d), want [12,16)", lo, hi)
	}
	for _, c := range []struct {
		layout string
		first  int
		want   string
	}{
		{"4,4,4,4,4,4,4", 0, "must list pp·vpp = 4·2 = 8 virtual stages"},
		{"4,4,4,4,4,4,4,5", 0, "sums to 33 layers: must be model.layers (32)"},
		{"-1,4,4,4,4,4,5,8", 0, `entry 0 is "-1": every virtual stage holds 0 to`},
		{"0,4,4,4,0,4,4,12", 0, "gives stage 0 no layer"},
		{"4,4,4,x,4,4,4,4", 0, `entry 3 is "x"`},
		{"4,4,4,4,4,4,4,4", 2, "excludes first_stage_layers and last_stage_layers"},
	} {
		b := j
		b.Parallel.PipelineLayout, b.Parallel.FirstStageLayers = c.layout, c.first
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("layout %v first %d: %v, want %q", c.layout, c.first, err, c.want)
		}
	}
}

// TestExpertTP: EPRanks and the checks of etp.
func TestExpertTP(t *testing.T) {
	m := mustModel(t, ModelDeepSeekV3) // 256 experts
	base := Job{Model: m, Cluster: Cluster{GPU: "H100-SXM", GPUs: 512, GPUsPerNode: 8},
		Parallel: Parallel{TP: 2, PP: 8, VPP: 1, EP: 64, ETP: 1, BudgetTokens: 4096, SequenceParallel: true,
			FirstStageLayers: 5, LastStageLayers: 8}, ContextTokens: 4096}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := base.Parallel.EPRanks(); got != 32 {
		t.Errorf("EPRanks = %d, want ep·etp/tp = 64·1/2 = 32", got)
	}
	if got := base.EPGroups(); got != 1 {
		t.Errorf("EPGroups = %d, want 1", got)
	}
	def := base.Parallel
	def.ETP, def.EP = 0, 16
	if def.ExpertTP() != 2 || def.EPRanks() != 16 {
		t.Errorf("etp 0: ExpertTP %d EPRanks %d, want tp and ep", def.ExpertTP(), def.EPRanks())
	}
	for _, c := range []struct {
		ep, etp int
		want    string
	}{
		{128, 1, "spans ep·etp/tp = 64 HDP ranks"},
		{1, 1, "ep·etp = 1·1 must be a multiple of tp (2)"},
		{64, 3, "must divide cluster.gpus_per_node (8)"},
		{64, 65, "parallel.etp = 65: must be in [0, 64]"},
	} {
		b := base
		b.Parallel.EP, b.Parallel.ETP = c.ep, c.etp
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ep %d etp %d: %v, want %q", c.ep, c.etp, err, c.want)
		}
	}
}

// TestOverlapAndFSDPChecks: the rules tying the overlap switches to the
// gradient sync and sequence parallelism.
func TestOverlapAndFSDPChecks(t *testing.T) {
	m := mustModel(t, ModelLlama3With8B)
	base := Job{Model: m, Cluster: Cluster{GPU: "H100-SXM", GPUs: 16, GPUsPerNode: 8},
		Parallel: Parallel{TP: 2, PP: 1, VPP: 1, EP: 1, BudgetTokens: 4096, SequenceParallel: true}, ContextTokens: 4096}
	for _, c := range []struct {
		edit func(*Parallel)
		want string
	}{
		{func(p *Parallel) { p.TPCommOverlap, p.OverlapGradReduce, p.OverlapParamGather = true, true, true }, ""},
		{func(p *Parallel) { p.GradSync = GradFSDP }, ""},
		{func(p *Parallel) { p.GradSync = GradFSDPReshard }, ""},
		{func(p *Parallel) { p.TPCommOverlap, p.SequenceParallel = true, false }, "parallel.tp_comm_overlap = true: needs sequence_parallel = true"},
		{func(p *Parallel) { p.OverlapParamGather, p.GradSync = true, GradAllReduce }, "parallel.overlap_param_gather = true: needs a sharded optimizer"},
		{func(p *Parallel) { p.OverlapGradReduce, p.GradSync = true, GradFSDP }, "FSDP always overlaps"},
		{func(p *Parallel) { p.GradSync = "zero3" }, `parallel.grad_sync = "zero3": must be`},
	} {
		b := base
		c.edit(&b.Parallel)
		err := b.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", b.Parallel, err, c.want)
		}
	}
	if !GradFSDP.Sharded() || GradAllReduce.Sharded() || !GradFSDPReshard.FSDP() || GradReduceScatter.FSDP() {
		t.Error("Sharded/FSDP classify the modes wrong")
	}
}
