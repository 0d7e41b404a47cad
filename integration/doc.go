// Package integration holds what "merge" means for wacpd's workspaces and
// the conflict rules that need no I/O (WACP Integration spec §3–§5, digest
// §3.11).
//
// # Model
//
// A workspace's work reaches its parent (the target) as an integration
// Record in the target's integration register: records 1, 2, … in the
// order the integrations completed, each naming the source workspace, the
// checkpoint integrated and its digest, the strategy, the mode, what the
// checkpoint changed (its payload's files_changed, the top-level keys of a
// JSON object payload.content) and, for evaluated, the coordinator's
// synthesis. Each record links to the one before it by digest (Prev), so
// the register is a hash chain like a checkpoint chain: one line, no
// forks. Fold reads a register into the target's State, the cumulative
// result of its integrations: which integration last provided each file and
// each content key. A record is built from the State it was merged onto
// (Next), so each integration sees every earlier one.
//
// Detect is the strategy's conflict detection against that State, for the
// Incoming checkpoint: direct detects nothing; layered detects
// content_overlap; evaluated detects all four types:
//
//   - content_overlap: a file the incoming checkpoint changed was provided
//     by an earlier integration of another workspace (one conflict per such
//     workspace, its files as resources);
//   - semantic_contradiction: payload.content of both is a JSON object and a
//     top-level key has different values (one conflict per earlier
//     workspace, resources "content:<key>");
//   - dependency_violation: the source's task depends on a task that is not
//     integrated (resources "task:<id>"), or payload.artifacts names a
//     checkpoint of another workspace whose files the target now holds from
//     a different checkpoint (the state the work was built on was replaced;
//     one conflict per such checkpoint, the files as resources);
//   - constraint_breach: the source declared an authority set (its write
//     grants) and changed files outside it (one conflict, those files).
//     An empty authority set declares no constraint.
//
// # Caveats
//
// The package reads nothing: the engine gathers the Incoming facts (the
// checkpoint, the checkpoints it names, the task's dependencies) and the
// records, in the commit that integrates.
package integration
