package scenarios

// Template is a minimal scenario with every section a scenario needs and a
// comment on each key (dcpsim scenarios new): Llama-3-8B at a 128K context
// on 64 H100s, HyDra beside Megatron-Core's DCP and static CP. It parses,
// fits in memory at its budget, and runs in a few seconds.
const Template = `# A dcpsim scenario: edit the values, keep the keys (an unknown key is an
# error). dcpsim scenarios check FILE validates it; dcpsim run FILE runs it;
# docs/scenarios.md lists every key and what it allows.
name = "my-scenario"          # [a-z0-9._-], at most 64 characters
description = "Llama-3-8B at 128K on 64 H100s"

[cluster]
gpu = "H100-SXM"              # a calibration profile (dcpsim calibrate lists them) or a .toml profile
gpus = 64
gpus_per_node = 8             # one NVLink domain

[model]
preset = "llama-3-8b"         # dcpsim models lists the presets

[parallel]
tp = 1                        # tensor parallel
pp = 4                        # pipeline stages (uneven layer splits: first_stage_layers, last_stage_layers)
vpp = 1                       # interleaved virtual stages per GPU
ep = 1                        # expert parallel (MoE models)
budget_tokens = 8192          # B: the most tokens a rank holds in a microbatch ("auto": the most that fits)
recompute = "selective"       # none, selective or full activation recomputation

[workload]
preset = "long-256k"          # a length distribution (dcpsim workload stats lists them) or file = "lengths.txt"
context_tokens = 131072       # the longest sequence
batch_tokens_per_gpu = 16384  # tokens per iteration, per GPU (or batch_tokens for the whole cluster)

[run]
iterations = 8
warmup_iterations = 1
seed = 1
policies = ["hydra", "mcore", "static"]   # dcpsim run --help lists every policy
`
