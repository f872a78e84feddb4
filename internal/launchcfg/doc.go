// Package launchcfg turns a training job as a planner already wrote it,
// Megatron-LM's command-line arguments (pretrain_gpt.py, or the launch
// script that runs it) or a NeMo Megatron-Bridge recipe (its YAML
// ConfigContainer: model:, train:, ddp:, mixed_precision:, ...), into the
// job a dcpsim scenario describes, and a scenario's layout back into
// Megatron-LM's arguments.
//
// Every argument is accounted for: mapped to a scenario key (or to how the
// cost model already prices it), listed as having no effect on the step
// time (logging, checkpointing, data paths, learning rate, ...), or
// refused by name because it changes the step in a way dcpsim does not
// model. An argument the catalog does not know is an error unless the
// caller ignores unknown arguments, and then it is listed. Megatron-LM's
// defaults apply where an argument is absent, and each one that matters is
// stated in the result (Import.Assumed).
//
// The package is pure: it parses the strings it is given (no files, no
// processes, no clock) and runs nothing a script names; the CLI reads the
// files (cmd/dcpsim import and export).
package launchcfg
